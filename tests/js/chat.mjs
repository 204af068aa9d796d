// The AI SDK's chat outside React, for the drivers: AbstractChat over a plain state
// object (what useChat keeps in React state), for whichever `ai` major is given.

class State {
  constructor() {
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
  }
  pushMessage(m) { this.messages = this.messages.concat(m); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; }
  snapshot(x) { return structuredClone(x); }
}

export function chatClass({ AbstractChat }) {
  return class Chat extends AbstractChat {
    constructor(init) { super({ ...init, state: new State() }); }
  };
}
