#!/usr/bin/env python3
"""Drive headless Chromium over the Chrome DevTools protocol (a minimal
WebSocket client, the standard library only): load a page, let it run for
real seconds, evaluate JavaScript in it, take a screenshot, and report
every console error and uncaught exception.

  cdp.py --chromium PATH --url URL [--wait S] [--eval EXPR]...
         [--screenshot FILE] [--width W --height H] [--profile DIR]

Prints one JSON object: {"eval": [results...], "errors": [...]}. Exits 0
when the page raised no error, 1 when it did, 2 when Chromium could not be
driven. Chromium runs with --headless --no-sandbox --disable-gpu, no
background networking, component updates or sync, a fresh profile.
"""
import argparse, base64, json, os, shutil, socket, struct, subprocess, sys, tempfile, time
import urllib.request


class WS:
    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            c = self.s.recv(1)
            if not c:
                raise OSError("websocket handshake: connection closed")
            head += c
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise OSError("websocket handshake: %r" % head[:80])

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        hdr = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                               bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                               bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            c = self.s.recv(n - len(buf))
            if not c:
                raise OSError("websocket closed")
            buf += c
        return buf

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7f
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            payload = self._exact(n)
            op = b0 & 0x0f
            if op == 8:
                raise OSError("websocket closed by Chromium")
            if op in (0, 1, 2):
                msg += payload
                if b0 & 0x80:
                    return msg.decode()


class Page:
    def __init__(self, ws):
        self.ws, self.next_id, self.errors = ws, 0, []

    def event(self, m):
        meth = m.get("method")
        p = m.get("params", {})
        if meth == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.errors.append("exception: %s" % (d.get("exception", {}).get("description") or d.get("text")))
        elif meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append("console.%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", []))))
        elif meth == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            self.errors.append("log: %s" % p["entry"].get("text"))

    def call(self, method, **params):
        self.next_id += 1
        me = self.next_id
        self.ws.send(json.dumps({"id": me, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == me:
                if "error" in m:
                    raise OSError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.event(m)

    def pump(self, seconds):
        end = time.time() + seconds
        self.ws.s.settimeout(0.2)
        while time.time() < end:
            try:
                self.event(json.loads(self.ws.recv()))
            except socket.timeout:
                pass
        self.ws.s.settimeout(30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chromium", default="chromium")
    ap.add_argument("--url", required=True)
    ap.add_argument("--wait", type=float, default=5)
    ap.add_argument("--eval", action="append", default=[])
    ap.add_argument("--screenshot")
    ap.add_argument("--width", type=int, default=1300)
    ap.add_argument("--height", type=int, default=760)
    ap.add_argument("--profile")
    a = ap.parse_args()
    profile = a.profile or tempfile.mkdtemp(prefix="cdp-profile.")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen([a.chromium, "--headless", "--no-sandbox", "--disable-gpu",
                             "--disable-background-networking", "--disable-component-update",
                             "--disable-sync", "--no-first-run", "--disable-extensions",
                             "--user-data-dir=" + profile, "--remote-debugging-address=127.0.0.1",
                             "--remote-debugging-port=%d" % port,
                             "--window-size=%d,%d" % (a.width, a.height), "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        page_ws = None
        for _ in range(300):
            try:
                lst = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=2))
                page_ws = next((t["webSocketDebuggerUrl"] for t in lst if t.get("type") == "page"), None)
                if page_ws:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        if not page_ws:
            print("cdp: Chromium offered no page to drive", file=sys.stderr)
            return 2
        p = Page(WS(page_ws))
        p.call("Runtime.enable")
        p.call("Log.enable")
        p.call("Page.enable")
        p.call("Emulation.setDeviceMetricsOverride", width=a.width, height=a.height,
               deviceScaleFactor=1, mobile=False)
        p.call("Page.navigate", url=a.url)
        p.pump(a.wait)
        out = {"eval": [], "errors": p.errors}
        for e in a.eval:
            r = p.call("Runtime.evaluate", expression=e, returnByValue=True)
            out["eval"].append(r.get("result", {}).get("value"))
        if a.screenshot:
            r = p.call("Page.captureScreenshot", format="png")
            with open(a.screenshot, "wb") as f:
                f.write(base64.b64decode(r["data"]))
        out["errors"] = p.errors
        print(json.dumps(out))
        return 1 if p.errors else 0
    except OSError as e:
        print("cdp: %s" % e, file=sys.stderr)
        return 2
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        if not a.profile:
            shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
