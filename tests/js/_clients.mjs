// What every driver opens with: the console captured for the report, waiting, ids, and the
// real npm clients by name. A driver imports these, then ends with `report(...)`.
//
//   client names: agui1 (@ag-ui/client 1.0.0), agui1.1 (the same, declaring 1.1), agui0 (@ag-ui/client 0.0.59), ai5, ai6, ai7

// Everything the client printed: a report carries it (a client's warnings are findings).
export const printed = [];
for (const level of ["warn", "error", "log", "info", "debug"]) {
  console[level] = (...args) => {
    printed.push(`${level}: ${args.map((a) => (a instanceof Error ? a.message : typeof a === "string" ? a : JSON.stringify(a))).join(" ")}`);
  };
}

// What was printed since the last call (a scenario's own lines).
export function takePrinted() {
  return printed.splice(0);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(pred, ms = 30000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return true;
    await sleep(20);
  }
  return pred();
}

export const uid = () => Math.random().toString(36).slice(2, 10);
export const errText = (e) => (e instanceof Error ? e.message : String(e));

// `agui(module)` or `aisdk(module, major)` with the client `name`'s npm module; an unknown
// name ends the process (status 2).
export async function withClient(name, { agui, aisdk }) {
  const loaders = {
    agui1: async () => agui(await import("agui-client-1")),
    // the 1.0.0 client declaring 1.1 (no 1.1 client is published): `agui(module, "1.1")`
    "agui1.1": async () => agui(await import("agui-client-1"), "1.1"),
    agui0: async () => agui(await import("agui-client-0")),
    ai5: async () => aisdk(await import("ai5"), 5),
    ai6: async () => aisdk(await import("ai6"), 6),
    ai7: async () => aisdk(await import("ai7"), 7),
  };
  if (!loaders[name]) {
    process.stderr.write(`unknown client ${name}\n`);
    process.exit(2);
  }
  return loaders[name]();
}

// Runs the driver with the client `name` and prints its one JSON report (a crash included),
// with what the client printed; exits once the report is flushed (a large one, a file of
// megabytes, would be cut short otherwise).
export async function report(name, handlers) {
  let result;
  try {
    result = await withClient(name, handlers);
  } catch (e) {
    result = { crashed: errText(e), stack: e?.stack ?? null };
  }
  process.stdout.write(JSON.stringify({ ...result, printed }), () => process.exit(0));
}
