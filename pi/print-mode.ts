/**
 * `/dispatch` in Pi's print mode (`pi -p "/dispatch …"`). Pi runs the command there, but print
 * mode shows only the model's final text: the dispatch's live view and its result message would
 * never appear, and a dispatch would run for minutes with nothing to show. So in print mode the
 * command says where it works instead, and runs nothing.
 */

export const PRINT_MODE_NOTE =
	"/dispatch shows its progress and result in Pi's interactive mode (`pi`) or over RPC (`pi --mode rpc`); " +
	"print mode (`pi -p`) cannot show them, so nothing was run. From a shell, use: agent-dispatch run --agent AGENT -- TASK";

/** True (after saying why on stderr) when `/dispatch` is running in print mode. */
export function refuseInPrintMode(ctx: { mode?: string }, write: (text: string) => void = (t) => process.stderr.write(t)): boolean {
	if (ctx.mode !== "print") return false;
	write(`${PRINT_MODE_NOTE}\n`);
	return true;
}
