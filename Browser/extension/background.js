// Baton Handoff: the focused tab of the focused window is this device's current activity (issue 14).
//
// Talks to the native messaging host `org.baton.browser` (`baton browser-host`, written by `baton browser install`):
//   to the host:   {"type":"tab","url":...,"title":...,"incognito":bool} on tab switch, navigation, title change and
//                  window focus change; {"type":"none"} when no browser window has focus.
//   from the host: {"type":"open","url":...} a page continued from another device: a new tab in the last focused
//                  window.
// Private windows and pages that are not http(s) are never sent (the host checks again). One source for Chromium
// (service worker) and Firefox (background script).
const api = typeof browser !== "undefined" ? browser : chrome;
const HOST = "org.baton.browser";
let port = null;
let backoff = 1000;
let connectedAt = 0;
let lastSent = "";

function connect() {
  try {
    port = api.runtime.connectNative(HOST);
  } catch (error) {
    port = null;
    retry();
    return;
  }
  connectedAt = Date.now();
  port.onMessage.addListener(received);
  port.onDisconnect.addListener(() => {
    port = null;
    lastSent = "";
    retry();
  });
  report();
}

function retry() {
  // The host is missing, or it ended: try again, more slowly each time (1 s doubling to a minute), from 1 s again
  // after a connection that lasted.
  if (Date.now() - connectedAt > 30000) backoff = 1000;
  setTimeout(connect, backoff);
  backoff = Math.min(backoff * 2, 60000);
}

function send(message) {
  const text = JSON.stringify(message);
  if (port === null || text === lastSent) return;
  lastSent = text;
  try {
    port.postMessage(message);
  } catch (error) {
    lastSent = "";
  }
}

function isWeb(url) {
  return typeof url === "string" && (url.startsWith("http://") || url.startsWith("https://"));
}

async function report() {
  try {
    const window = await api.windows.getLastFocused({ populate: false });
    if (!window || !window.focused) return send({ type: "none" });
    const tabs = await api.tabs.query({ active: true, windowId: window.id });
    const tab = tabs[0];
    if (!tab || window.incognito || tab.incognito || !isWeb(tab.url)) return send({ type: "none" });
    send({ type: "tab", url: tab.url, title: tab.title || "", incognito: false });
  } catch (error) {
    send({ type: "none" });
  }
}

async function received(message) {
  if (!message || message.type !== "open" || !isWeb(message.url)) return;
  try {
    const window = await api.windows.getLastFocused({ populate: false });
    const options = { url: message.url, active: true };
    if (window && !window.incognito) options.windowId = window.id;
    await api.tabs.create(options);
    if (options.windowId !== undefined) await api.windows.update(options.windowId, { focused: true });
  } catch (error) {
    await api.tabs.create({ url: message.url });
  }
}

api.tabs.onActivated.addListener(report);
api.tabs.onUpdated.addListener((tabId, change, tab) => {
  if (tab.active && (change.url !== undefined || change.title !== undefined || change.status === "complete")) report();
});
api.windows.onFocusChanged.addListener((windowId) => {
  if (windowId === api.windows.WINDOW_ID_NONE) return send({ type: "none" });
  report();
});
connect();
