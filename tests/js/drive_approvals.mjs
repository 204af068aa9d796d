// Approval policies with a REAL npm client against a callwright server; prints one JSON report.
//
//   node drive_approvals.mjs <client> <baseUrl>
//   client: agui1 (@ag-ui/client 1.0.0), agui0 (@ag-ui/client 0.0.59), ai5, ai6, ai7
//
// The server's agent (tests/wire/test_approval_policy_clients.py) has an agent-wide
// policy: tidy is approved and purge denied without asking, write_note and the front-end
// tool pick ask a human, the front-end tool danger is denied. Each scenario runs in a
// fresh thread; its report holds what the client ended up with, the raw streams or the
// events it received, and everything the client printed.

import { chatClass } from "./chat.mjs";
import { printed, sleep, waitFor as waitUntil, uid, errText, withClient, takePrinted } from "./_clients.mjs";

const [clientName, baseUrl] = process.argv.slice(2);

const waitFor = (pred, ms = 15000) => waitUntil(pred, ms);
const frontEnd = (name) => ({ name, description: `front-end ${name}`, parameters: { type: "object", properties: {} } });
const extras = { data: { folder: "inbox" }, remember: "thread" };

// --- AG-UI -------------------------------------------------------------------------------

async function aguiScenarios({ HttpAgent }) {
  function newAgent(text) {
    const agent = new HttpAgent({ url: `${baseUrl}/agui`, threadId: `t_${uid()}` });
    agent.addMessage({ id: `u_${uid()}`, role: "user", content: text });
    return agent;
  }
  async function run(agent, params = {}) {
    const events = [];
    let error = null;
    try {
      await agent.runAgent(params, { onEvent: ({ event }) => events.push(event) });
    } catch (e) {
      error = errText(e);
    }
    return { events, error };
  }
  const interruptsOf = (r) => r.events.findLast((e) => e.type === "RUN_FINISHED")?.outcome?.interrupts ?? [];
  const say = (agent, text) => agent.addMessage({ id: `u_${uid()}`, role: "user", content: text });
  const report = (agent, runs) => ({ runs, messages: agent.messages });
  return {
    tidy: async () => {
      const agent = newAgent("tidy");
      return report(agent, [await run(agent)]);
    },
    purge: async () => {
      const agent = newAgent("purge");
      const first = await run(agent);
      say(agent, "recap");
      return report(agent, [first, await run(agent)]);
    },
    write: async () => {
      const agent = newAgent("write a");
      const first = await run(agent);
      const resume = interruptsOf(first).map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true, ...extras } }));
      const second = await run(agent, { resume });
      say(agent, "write b");
      return report(agent, [first, second, await run(agent)]);
    },
    danger: async () => {
      const agent = newAgent("danger");
      return report(agent, [await run(agent, { tools: [frontEnd("danger")] })]);
    },
    pick: async () => {
      const agent = newAgent("pick");
      const tools = [frontEnd("pick")];
      const first = await run(agent, { tools });
      const resume = interruptsOf(first).map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } }));
      const second = await run(agent, { tools, resume });
      const call = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.function.name === "pick");
      agent.addMessage({ id: `tool_${uid()}`, role: "tool", toolCallId: call.id, content: "blue" });
      return report(agent, [first, second, await run(agent, { tools })]);
    },
  };
}

// --- AI SDK ------------------------------------------------------------------------------

async function aiScenarios(mod, major) {
  const { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls } = mod;
  const completeWithApprovals = mod.lastAssistantMessageIsCompleteWithApprovalResponses;
  const Chat = chatClass(mod);
  function newChat(tools) {
    const streams = [];
    const requests = [];
    const errors = [];
    const fetch = async (url, init) => {
      requests.push(JSON.parse(init.body));
      const response = await globalThis.fetch(url, init);
      if (!response.ok || !response.body) return response;
      const [mine, theirs] = response.body.tee();
      const record = { status: response.status, text: "" };
      streams.push(record);
      (async () => {
        const decoder = new TextDecoder();
        for await (const piece of mine) record.text += decoder.decode(piece, { stream: true });
      })();
      return new Response(theirs, { status: response.status, headers: response.headers });
    };
    const chat = new Chat({
      transport: new DefaultChatTransport({
        api: `${baseUrl}/api/chat`,
        headers: { "x-ai-sdk-version": String(major) },
        body: tools ? { tools } : undefined,
        fetch,
      }),
      onError: (e) => errors.push(errText(e)),
      sendAutomaticallyWhen: ({ messages }) =>
        lastAssistantMessageIsCompleteWithToolCalls({ messages }) ||
        (completeWithApprovals ? completeWithApprovals({ messages }) : false),
    });
    return { chat, streams, requests, errors };
  }
  const lastText = (chat) => {
    const last = chat.messages.at(-1);
    return last?.role === "assistant" ? last.parts.filter((p) => p.type === "text").map((p) => p.text).join("") : "";
  };
  const settled = (chat) => chat.status === "ready" || chat.status === "error";
  async function send(ctx, text, done) {
    try {
      await ctx.chat.sendMessage({ text });
    } catch (e) {
      ctx.errors.push(`sendMessage threw: ${errText(e)}`);
    }
    await waitFor(() => (done(ctx.chat) && settled(ctx.chat)) || ctx.chat.status === "error");
    await sleep(50);
  }
  const doneWith = (prefix) => (c) => lastText(c).includes(prefix);
  const asked = (c) => c.messages.at(-1)?.parts?.some((p) => p.state === "approval-requested");
  const report = (ctx, extra = {}) => ({
    status: ctx.chat.status,
    error: ctx.chat.error ? errText(ctx.chat.error) : null,
    chatId: ctx.chat.id,
    messages: ctx.chat.messages,
    streams: ctx.streams,
    requests: ctx.requests,
    errors: ctx.errors,
    ...extra,
  });
  return {
    tidy: async () => {
      const ctx = newChat();
      await send(ctx, "tidy", doneWith("Done:"));
      return report(ctx);
    },
    purge: async () => {
      const ctx = newChat();
      await send(ctx, "purge", doneWith("Done:"));
      await send(ctx, "recap", doneWith("Recap:"));
      return report(ctx);
    },
    write: async () => {
      const ctx = newChat();
      await send(ctx, "write a", asked);
      const part = ctx.chat.messages.at(-1)?.parts?.find((p) => p.state === "approval-requested");
      if (part && ctx.chat.addToolApprovalResponse) {
        const id = part.approval.id;
        // the SDK's approval response has no place for data: it rides in the request body
        await ctx.chat.addToolApprovalResponse({ id, approved: true, options: { body: { approvals: { [id]: extras } } } });
        await waitFor(() => lastText(ctx.chat).includes("Done:") && settled(ctx.chat));
        await sleep(50);
        await send(ctx, "write b", (c) => lastText(c).includes("Done: write_note={\"text\":\"b\""));
      }
      return report(ctx, { approvalId: part?.approval?.id ?? null });
    },
    danger: async () => {
      const ctx = newChat([frontEnd("danger")]);
      await send(ctx, "danger", doneWith("Done:"));
      return report(ctx);
    },
  };
}

const scenarios = await withClient(clientName, { agui: aguiScenarios, aisdk: aiScenarios });
const out = { scenarios: {} };
for (const [name, fn] of Object.entries(scenarios)) {
  takePrinted();
  let result;
  try {
    result = await fn();
  } catch (e) {
    result = { crashed: errText(e), stack: e?.stack ?? null };
  }
  out.scenarios[name] = { ...result, printed: takePrinted() };
}
process.stdout.write(JSON.stringify(out));
process.exit(0);
