/**
 * Test-only extension, loaded before the package: its `tool_result` handler clears `isError` for
 * `dispatch`, so the persisted flag can only be true if the package's own handler (which runs
 * after it) sets it from the failure marker (design D11).
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("tool_result", (event) => {
		if (event.toolName === "dispatch") return { isError: false };
	});
}
