// Front-end tools: declared to the agent with every run, carried out here in the
// browser. The run stops with their calls pending; the page adds a `tool` message with
// each result and runs again.

import type { Tool } from "@ag-ui/client";

export type FrontEndTool = Tool & { run: (args: Record<string, unknown>) => Promise<unknown> };

export const frontEndTools: FrontEndTool[] = [
  {
    name: "user_locale",
    description: "The user's time zone and language, from their browser.",
    parameters: { type: "object", properties: {} },
    run: async () => ({
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      locale: navigator.language,
    }),
  },
];
