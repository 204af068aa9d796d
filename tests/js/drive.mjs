// Drives a callwright server with a REAL npm client and prints one JSON report.
//
//   node drive.mjs <client> <baseUrl>
//   client: agui1 (@ag-ui/client 1.0.0), agui0 (@ag-ui/client 0.0.59), ai5, ai6, ai7
//   $DRIVE_HEADERS: extra request headers as a JSON object (e.g. an Authorization header)
//
// Every scenario runs in a fresh agent / chat; its report holds what the client
// ended up with (messages, state, status, errors), the events or raw stream it
// received, and every console warning or error the client printed. The Python
// tests (tests/wire/test_js_clients.py) assert on it.

import { chatClass } from "./chat.mjs";
import { printed, sleep, waitFor as waitUntil, uid, errText, withClient, takePrinted } from "./_clients.mjs";

const [clientName, baseUrl] = process.argv.slice(2);
const extraHeaders = JSON.parse(process.env.DRIVE_HEADERS ?? "{}");

// --- capture everything a client prints ------------------------------------------------
process.on("warning", (w) => printed.push(`process-warning: ${w.name}: ${w.message}`));

const waitFor = (pred, ms = 15000) => waitUntil(pred, ms);

const pickColor = {
  name: "pick_color",
  description: "Ask the user to pick a color",
  parameters: { type: "object", properties: { options: { type: "array", items: { type: "string" } } } },
};
const fakeWeather = { name: "weather", description: "shadowing a server tool", parameters: { type: "object", properties: {} } };

// --- AG-UI -------------------------------------------------------------------------------

async function aguiScenarios(mod) {
  const { HttpAgent } = mod;
  function newAgent(text) {
    const agent = new HttpAgent({ url: `${baseUrl}/agui`, threadId: `t_${uid()}`, headers: extraHeaders });
    agent.addMessage({ id: `u_${uid()}`, role: "user", content: text });
    return agent;
  }
  async function run(agent, params = {}, hooks = {}) {
    const events = [];
    let error = null;
    let finished = null;
    try {
      await agent.runAgent(params, {
        onEvent: ({ event }) => {
          events.push(event);
          hooks.onEvent?.(event, agent);
        },
        onRunFinishedEvent: (p) => {
          finished = { outcome: p.outcome ?? null, pendingToolCallIds: p.pendingToolCallIds ?? null, interrupts: p.interrupts ?? null };
        },
      });
    } catch (e) {
      error = errText(e);
    }
    return { events, error, finished };
  }
  const report = (agent, runs) => ({
    runs,
    messages: agent.messages,
    state: agent.state,
    pendingInterrupts: agent.pendingInterrupts ?? null,
  });
  const simple = (name) => async () => {
    const agent = newAgent(name);
    return report(agent, [await run(agent)]);
  };
  return {
    chat: simple("chat"),
    weather: simple("weather"),
    note: simple("note"),
    parallel: simple("parallel"),
    interleaved: simple("interleaved"),
    deploy: simple("deploy"),
    fail: simple("fail"),
    purge: simple("purge"),
    // the failed call comes back in the client's history of the next run
    fail_recap: async () => {
      const agent = newAgent("fail");
      const first = await run(agent);
      agent.addMessage({ id: `u_${uid()}`, role: "user", content: "recap" });
      const second = await run(agent);
      return report(agent, [first, second]);
    },
    badargs: simple("badargs"),
    crash: simple("crash"),
    color: async () => {
      const agent = newAgent("color");
      const first = await run(agent, { tools: [pickColor] });
      const call = agent.messages.flatMap((m) => m.toolCalls ?? [])[0];
      agent.addMessage({ id: `tool_${uid()}`, role: "tool", toolCallId: call.id, content: "blue" });
      const second = await run(agent, { tools: [pickColor] });
      return report(agent, [first, second]);
    },
    context: async () => {
      const agent = newAgent("context");
      const context = [{ description: "locale", value: "fr-FR" }];
      return report(agent, [await run(agent, { context })]);
    },
    props: async () => {
      const agent = newAgent("props");
      return report(agent, [await run(agent, { forwardedProps: { tenant: "acme" } })]);
    },
    blocked: async () => {
      const agent = newAgent("blocked");
      const first = await run(agent, { tools: [pickColor] });
      const call = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.function.name === "pick_color");
      agent.addMessage({ id: `tool_${uid()}`, role: "tool", toolCallId: call.id, content: "\"Oslo\"" });
      const second = await run(agent, { tools: [pickColor] });
      return report(agent, [first, second]);
    },
    approve: async () => approval({ approved: true }),
    approve_edit: async () => approval({ approved: true, arguments: { path: "/tmp/other.txt" } }),
    deny: async () => approval({ approved: false, reason: "not today" }),
    slow: async () => {
      const agent = newAgent("slow");
      let callId = null;
      const first = await run(agent, {}, {
        onEvent: (event) => {
          if (event.type === "TOOL_CALL_END") {
            callId = event.toolCallId;
            setTimeout(() => agent.abortRun(), 200);
          }
        },
      });
      await sleep(300);
      // the client must still be usable after the aborted stream
      agent.addMessage({ id: `u_${uid()}`, role: "user", content: "chat" });
      const second = await run(agent);
      return { ...report(agent, [first, second]), callId };
    },
    research: async () => {
      const agent = newAgent("research");
      const first = await run(agent);
      // the delegate's messages stay in the client's list; the next run must still work
      agent.addMessage({ id: `u_${uid()}`, role: "user", content: "chat" });
      const second = await run(agent);
      return report(agent, [first, second]);
    },
    conflict: async () => {
      const agent = newAgent("chat");
      return report(agent, [await run(agent, { tools: [fakeWeather] })]);
    },
  };
  async function approval(payload) {
    const agent = newAgent("delete");
    const first = await run(agent);
    const interrupts = agent.pendingInterrupts ?? first.finished?.interrupts ?? [];
    const resume = interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload }));
    const second = await run(agent, { resume });
    // answering the same interrupt twice must be refused
    const third = await run(agent, { resume });
    return report(agent, [first, second, third]);
  }
}

// --- AI SDK --------------------------------------------------------------------------------

async function aiScenarios(mod, major) {
  const { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls } = mod;
  const completeWithApprovals = mod.lastAssistantMessageIsCompleteWithApprovalResponses;

  const Chat = chatClass(mod);

  function newChat({ tools, onToolCall } = {}) {
    const streams = [];
    const data = [];
    const errors = [];
    const fetch = async (url, init) => {
      const response = await globalThis.fetch(url, init);
      if (!response.ok || !response.body) return response;
      const [mine, theirs] = response.body.tee();
      const record = { status: response.status, headers: Object.fromEntries(response.headers), text: "" };
      streams.push(record);
      (async () => {
        const decoder = new TextDecoder();
        try {
          for await (const piece of mine) record.text += decoder.decode(piece, { stream: true });
        } catch (e) {
          record.readError = errText(e);
        }
      })();
      return new Response(theirs, { status: response.status, headers: response.headers });
    };
    const chat = new Chat({
      transport: new DefaultChatTransport({
        api: `${baseUrl}/api/chat`,
        headers: { ...extraHeaders, "x-ai-sdk-version": String(major) },
        body: tools ? { tools } : undefined,
        fetch,
      }),
      onToolCall: (arg) => onToolCall?.(arg, chat),
      onData: (part) => data.push(part),
      onError: (e) => errors.push(errText(e)),
      sendAutomaticallyWhen: ({ messages }) =>
        lastAssistantMessageIsCompleteWithToolCalls({ messages }) ||
        (completeWithApprovals ? completeWithApprovals({ messages }) : false),
    });
    return { chat, streams, data, errors };
  }
  const lastText = (chat) => {
    const last = chat.messages[chat.messages.length - 1];
    return last?.role === "assistant" ? last.parts.filter((p) => p.type === "text").map((p) => p.text).join("") : "";
  };
  const settled = (chat) => chat.status === "ready" || chat.status === "error";
  async function send(ctx, text, done = (c) => lastText(c).includes("Done:")) {
    try {
      await ctx.chat.sendMessage({ text });
    } catch (e) {
      ctx.errors.push(`sendMessage threw: ${errText(e)}`);
    }
    await waitFor(() => (done(ctx.chat) && settled(ctx.chat)) || ctx.chat.status === "error");
    await sleep(50);
  }
  const report = (ctx, extra = {}) => ({
    status: ctx.chat.status,
    error: ctx.chat.error ? errText(ctx.chat.error) : null,
    messages: ctx.chat.messages,
    streams: ctx.streams,
    data: ctx.data,
    errors: ctx.errors,
    ...extra,
  });
  const simple = (name, until) => async () => {
    const ctx = newChat();
    await send(ctx, name, until);
    return report(ctx);
  };
  const approvalFlow = async (approved, reason) => {
    const ctx = newChat();
    await send(ctx, "delete", (c) => c.messages.at(-1)?.parts?.some((p) => p.state === "approval-requested"));
    const part = ctx.chat.messages.at(-1)?.parts?.find((p) => p.state === "approval-requested");
    if (part && ctx.chat.addToolApprovalResponse) {
      await ctx.chat.addToolApprovalResponse({ id: part.approval.id, approved, reason });
      await waitFor(() => lastText(ctx.chat).includes("Done:") && settled(ctx.chat));
      await sleep(50);
    }
    return report(ctx, { approvalId: part?.approval?.id ?? null });
  };
  return {
    chat: simple("chat", (c) => lastText(c).length > 0),
    weather: simple("weather"),
    note: simple("note"),
    parallel: simple("parallel"),
    interleaved: simple("interleaved"),
    research: simple("research"),
    deploy: simple("deploy"),
    fail: simple("fail"),
    purge: simple("purge"),
    fail_recap: async () => {
      const ctx = newChat();
      await send(ctx, "fail");
      await send(ctx, "recap", (c) => lastText(c).includes("Recap:"));
      return report(ctx);
    },
    badargs: simple("badargs"),
    crash: simple("crash", () => false),
    color: async () => {
      const ctx = newChat({
        tools: [pickColor],
        onToolCall: ({ toolCall }, chat) => {
          if (toolCall.toolName === "pick_color") {
            // not awaited: awaiting inside onToolCall would deadlock the chat's job queue
            chat.addToolOutput({ tool: "pick_color", toolCallId: toolCall.toolCallId, output: "blue" });
          }
        },
      });
      await send(ctx, "color");
      return report(ctx);
    },
    approve: () => approvalFlow(true),
    deny: () => approvalFlow(false, "not today"),
    slow: async () => {
      let callId = null;
      const ctx = newChat({
        onToolCall: ({ toolCall }, chat) => {
          if (toolCall.toolName === "wait_for_cancel") {
            callId = toolCall.toolCallId;
            setTimeout(() => chat.stop(), 200);
          }
        },
      });
      await send(ctx, "slow", () => callId !== null);
      await waitFor(() => settled(ctx.chat));
      await sleep(300);
      const afterStop = { status: ctx.chat.status, error: ctx.chat.error ? errText(ctx.chat.error) : null };
      await send(ctx, "chat", (c) => lastText(c).startsWith("Hello"));
      return report(ctx, { callId, afterStop });
    },
    conflict: async () => {
      const ctx = newChat({ tools: [fakeWeather] });
      await send(ctx, "chat", () => false);
      return report(ctx);
    },
  };
}

// --- main ----------------------------------------------------------------------------------

const scenarios = await withClient(clientName, { agui: aguiScenarios, aisdk: aiScenarios });
const out = { node: process.version, scenarios: {} };
for (const [name, fn] of Object.entries(scenarios)) {
  takePrinted();
  let result;
  const started = Date.now();
  try {
    result = await fn();
  } catch (e) {
    result = { crashed: errText(e), stack: e?.stack ?? null };
  }
  out.scenarios[name] = { ...result, printed: takePrinted(), ms: Date.now() - started };
}
process.stdout.write(JSON.stringify(out));
process.exit(0);
