// Drives callwright's MCP server with the TypeScript SDK's client and prints one JSON report.
//
//   node drive_server.mjs stdio <command> <args...>   (callwright mcp, as a subprocess)
//   node drive_server.mjs http <url>                  (the streamable-HTTP endpoint)
//
// The client declares elicitation and approves what it is asked (recording the question),
// lists the tools, calls a plain tool, a tool with progress, a tool that needs approval,
// the agent itself, and a tool the client then cancels. tests/mcp/test_js_clients.py
// asserts on the report.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, ...rest] = process.argv.slice(2);
const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: { ...process.env }, stderr: "ignore" })
    : new StreamableHTTPClientTransport(new URL(rest[0]));

const report = { questions: [], progress: [], errors: [] };
const client = new Client({ name: "ts-sdk-test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  report.questions.push({ message: request.params.message, schema: request.params.requestedSchema });
  return { action: "accept", content: { approved: true } };
});

const text = (result) => ({ text: result.content?.[0]?.text ?? null, isError: result.isError ?? false, structured: result.structuredContent ?? null });
try {
  await client.connect(transport);
  report.server = client.getServerVersion();
  report.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  report.add = text(await client.callTool({ name: "add", arguments: { a: 20, b: 22 } }));
  report.weather = text(await client.callTool({ name: "weather", arguments: { city: "Rome" } }));
  report.slow = text(
    await client.callTool({ name: "slow", arguments: { steps: 3 } }, undefined, {
      onprogress: (p) => report.progress.push({ progress: p.progress, message: p.message ?? null }),
    }),
  );
  report.delete = text(await client.callTool({ name: "delete_file", arguments: { path: "/tmp/ts" } }));
  report.agent = text(await client.callTool({ name: "helper", arguments: { prompt: "delete /tmp/agent" } }));
  const controller = new AbortController();
  setTimeout(() => controller.abort("stop"), 300);
  try {
    await client.callTool({ name: "wait_for_cancel", arguments: {} }, undefined, { signal: controller.signal });
    report.cancelled = false;
  } catch (e) {
    report.cancelled = String(e?.message ?? e);
  }
  await new Promise((r) => setTimeout(r, 500)); // the server sees notifications/cancelled
} catch (e) {
  report.errors.push(String(e?.stack ?? e));
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(report));
process.exit(0);
