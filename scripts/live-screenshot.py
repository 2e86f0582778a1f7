#!/usr/bin/env python3
"""README's screenshot of the live page (docs/live.png), from a real run: the bundled crud-mixed at
100 operations/s per group for 20 s with --live --live-control, opened in headless Chromium (driven
over --remote-debugging-pipe, loopback only); at 6 s the page's own control sets insert to 300/s,
and at 13 s the top of the page is taken. Usage: scripts/live-screenshot.py [OUT.png]"""
import base64, json, os, socket, subprocess, sys, tempfile, time

OUT = sys.argv[1] if len(sys.argv) > 1 else "docs/live.png"
PROFILE = tempfile.mkdtemp(prefix="live-shot-")
TOOL = "target/release/mongo-stress"


class Browser:
    def __init__(self, extra=(), size="1300,2400"):
        r_cmd, w_cmd = os.pipe()    # we write commands, chromium reads fd 3
        r_out, w_out = os.pipe()    # chromium writes fd 4, we read
        def child():
            a, b = os.dup(r_cmd), os.dup(w_out)
            os.dup2(a, 3); os.dup2(b, 4)
        self.p = subprocess.Popen(["chromium-headless-shell", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
            "--proxy-server=socks5://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--user-data-dir=" + PROFILE + "", "--window-size=" + size, "--remote-debugging-pipe", *extra, "about:blank"],
            preexec_fn=child, close_fds=False, stderr=subprocess.DEVNULL)
        os.close(r_cmd); os.close(w_out)
        self.w, self.r = w_cmd, r_out
        self.buf = b""
        self.id = 0
        self.events = []
        t = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=t["targetId"], flatten=True)["sessionId"]
        self.call("Page.enable", s=True)
        self.call("Runtime.enable", s=True)

    def call(self, method, s=False, **params):
        self.id += 1
        msg = {"id": self.id, "method": method, "params": params}
        if s:
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self.read()
            if m.get("id") == self.id:
                if "error" in m:
                    raise RuntimeError(m["error"])
                return m["result"]
            self.events.append(m)

    def read(self):
        while b"\0" not in self.buf:
            chunk = os.read(self.r, 1 << 16)
            if not chunk:
                raise EOFError("chromium went away")
            self.buf += chunk
        one, self.buf = self.buf.split(b"\0", 1)
        return json.loads(one)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", s=True, expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(r["exceptionDetails"])
        return r["result"].get("value")

    def goto(self, url):
        self.call("Page.navigate", s=True, url=url)

    def wait(self, expr, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            try:
                v = self.eval(expr)
            except RuntimeError:
                v = None
            if v:
                return v
            time.sleep(0.2)
        raise TimeoutError(expr)

    def shot(self, path, full=True, clip=None):
        kw = {"clip": dict(clip, scale=1)} if clip else {}
        r = self.call("Page.captureScreenshot", s=True, format="png", captureBeyondViewport=full, **kw)
        open(path, "wb").write(base64.b64decode(r["data"]))

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        self.p.wait(10)

    def console(self):
        return [e for e in self.events if e.get("method") in ("Runtime.exceptionThrown", "Runtime.consoleAPICalled")]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


port = free_port()
out_dir = tempfile.mkdtemp(prefix="live-run-")
run = subprocess.Popen([TOOL, "run", "crud-mixed", "--rate", "100", "--duration", "20s", "--quiet", "--force",
                        "--out", os.path.join(out_dir, "run"), "--live", f"127.0.0.1:{port}", "--live-control"])
try:
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert run.poll() is None, "the run ended before its page answered"
            time.sleep(0.1)
    b = Browser(size="1300,1500")
    try:
        b.goto(f"http://127.0.0.1:{port}/")
        b.wait("document.body.dataset.ready === '1' && +document.body.dataset.intervals >= 6", 90)
        b.eval("document.getElementById('set-insert').value = '300'")
        b.eval("document.querySelector('button[data-group=insert]').click()")
        b.wait("+document.body.dataset.intervals >= 13", 60)
        time.sleep(1.2)
        errors = b.eval("document.getElementById('errors').textContent")
        assert not errors, errors
        b.shot(OUT, full=False)
        print(f"{OUT}: the page at {b.eval('document.body.dataset.intervals')} intervals")
    finally:
        b.close()
finally:
    run.wait(60)
