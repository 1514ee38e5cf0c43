// Runs the <script> of examples/web/poll.html in Node, as a browser would: a real WebSocket
// (the `ws` package, same API as the browser's) and a minimal DOM. Clicks the first option's
// button once the page has drawn, waits for the redraw the server's update triggers, and
// prints what the page shows as JSON.
// Usage: node poll_page.js PAGE_HTML WS_URL ORIGIN
const fs = require("fs");
const WS = require("ws");

const [page, url, origin] = process.argv.slice(2);
const html = fs.readFileSync(page, "utf8");
const script = html.match(/<script>([\s\S]*)<\/script>/)[1].replace("ws://127.0.0.1:8000/mcp", url);

const elements = {};
function element(id) {
  elements[id] = elements[id] || { textContent: "", children: [], replaceChildren(...c) { this.children = c; } };
  return elements[id];
}
const document = {
  getElementById: element,
  createElement: () => ({ textContent: "", onclick: null }),
};
class WebSocket extends WS {
  constructor(address, protocol) { super(address, protocol, { headers: { Origin: origin } }); }
}

new Function("document", "WebSocket", script)(document, WebSocket);

let clicked = false;
const deadline = Date.now() + 5000;
const timer = setInterval(() => {
  const total = element("total").textContent;
  if (!clicked && total === "0 votes") {
    clicked = true;
    element("options").children[0].onclick();
  } else if (clicked && total === "1 votes") {
    clearInterval(timer);
    console.log(JSON.stringify({
      question: element("question").textContent,
      total,
      buttons: element("options").children.map((b) => b.textContent),
    }));
    process.exit(0);
  } else if (Date.now() > deadline) {
    console.error(`page stuck: total=${JSON.stringify(total)} clicked=${clicked}`);
    process.exit(1);
  }
}, 20);
