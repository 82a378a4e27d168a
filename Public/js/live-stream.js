// One Server-Sent Events stream (the admin stream, or one observer's) with resume.
//
// The browser's EventSource reconnects by itself after a dropped connection and sends
// Last-Event-ID, so the server resumes where the stream stopped. When it gives up
// (an answer that is not a stream: 401, 404, a server that is gone) the stream is
// reopened here with `?lastEventId=` after a growing pause, once `onClosed` allows it.

const RETRY_MS = [500, 1000, 2000, 5000];

export class LiveStream {
  /**
   * @param api        the Api (token and base URL)
   * @param path       the stream's path
   * @param kinds      the `event:` names to listen to (`reset` is always one)
   * @param handlers   {event(kind, data, id), reset(data), state("live"|"reconnecting"|"closed"),
   *                    closed(): Promise<boolean> — whether to reopen}
   */
  constructor(api, path, kinds, handlers) {
    this.api = api;
    this.path = path;
    this.kinds = kinds;
    this.handlers = handlers;
    this.lastEventId = null;
    this.failures = 0;
    this.stopped = false;
  }

  start() {
    this.stopped = false;
    this.open();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.source?.close();
    this.source = null;
  }

  open() {
    const source = new EventSource(this.api.streamURL(this.path, this.lastEventId));
    this.source = source;
    source.onopen = () => {
      this.failures = 0;
      this.handlers.state?.("live");
    };
    for (const kind of this.kinds) {
      source.addEventListener(kind, (message) => this.deliver(kind, message));
    }
    source.addEventListener("reset", (message) => this.handlers.reset?.(parse(message.data)));
    source.onerror = () => {
      if (this.stopped || source !== this.source) return;
      if (source.readyState !== EventSource.CLOSED) {
        this.handlers.state?.("reconnecting");
        return;
      }
      this.handlers.state?.("closed");
      source.close();
      this.reopenLater();
    };
  }

  deliver(kind, message) {
    if (message.lastEventId) this.lastEventId = message.lastEventId;
    const data = parse(message.data);
    if (data) this.handlers.event(kind, data, message.lastEventId || null);
  }

  async reopenLater() {
    const delay = RETRY_MS[Math.min(this.failures, RETRY_MS.length - 1)];
    this.failures += 1;
    const reopen = (await this.handlers.closed?.()) ?? true;
    if (!reopen || this.stopped) return;
    this.retryTimer = setTimeout(() => {
      if (!this.stopped) this.open();
    }, delay);
  }
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    console.warn("event data is not JSON", text);
    return null;
  }
}
