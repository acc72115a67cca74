"""A minimal Chrome DevTools Protocol client over --remote-debugging-pipe
(file descriptors 3 and 4, messages ended by NUL), standard library only:
opens a page in headless Chromium in real time (not --dump-dom's virtual
time) and evaluates JavaScript in it.

    with Browser(exe) as b:
        page = b.open("file:///tmp/page.html")
        b.evaluate(page, "document.title", await_promise=False)
"""
import json
import os
import subprocess
import tempfile
import time


class Browser:
    def __init__(self, exe):
        self.profile = tempfile.mkdtemp(prefix="attn-cdp-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():  # the child reads commands on 3 and writes answers on 4
            commands, answers = os.dup(to_chrome_r), os.dup(from_chrome_w)  # out of 3 and 4's way
            os.dup2(commands, 3)
            os.dup2(answers, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={self.profile}",
             "--remote-debugging-pipe", "about:blank"],
            preexec_fn=fds, pass_fds=(3, 4),  # kept after preexec_fn, when the rest are closed
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.next_id, self.buffer = 0, b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.call("Browser.close")
        except (OSError, RuntimeError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def call(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.buffer:
                chunk = os.read(self.from_chrome, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    def open(self, url):
        """A new tab showing `url`: its session, for evaluate()."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.navigate", {"url": url}, session)
        return session

    def evaluate(self, session, expression, await_promise=True):
        for attempt in range(50):  # the page may still be replacing about:blank
            try:
                result = self.call("Runtime.evaluate", {"expression": expression,
                                                        "awaitPromise": await_promise,
                                                        "returnByValue": True}, session)
                break
            except RuntimeError as e:
                if "context was destroyed" not in str(e) or attempt == 49:
                    raise
                time.sleep(0.1)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:60]}: {result['exceptionDetails']}")
        return result["result"].get("value")
