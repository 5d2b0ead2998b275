"""A client for hloscope's REST API (docs/API.md) on urllib alone."""
import json
import urllib.error
import urllib.parse
import urllib.request


class HloscopeError(RuntimeError):
    """An error reply: the server's code, message, JSON path, line and
    column (and instruction, when one is to blame), and the HTTP status."""

    def __init__(self, status, code, message, path="", line=0, column=0,
                 instruction=None):
        where = path or ""
        if line:
            where = f"{line}:{column}: {where}" if where else \
                f"{line}:{column}"
        text = f"{code}: {where + ': ' if where else ''}{message}"
        if instruction:
            text += f" (instruction {instruction})"
        super().__init__(f"HTTP {status} {text}")
        self.status, self.code, self.message = status, code, message
        self.path, self.line, self.column = path, line, column
        self.instruction = instruction


class Client:
    """Client("http://127.0.0.1:8080"). compile, run and compare take a
    model (a dict from hloscope.export, or JSON text) and return the
    server's summary as a dict; its links (`links`) are made absolute."""

    def __init__(self, url, timeout=300):
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _request(self, method, path, body=None, query=None):
        url = self.url + path
        q = {k: v for k, v in (query or {}).items() if v is not None}
        if q:
            url += "?" + urllib.parse.urlencode(q)
        data = None
        headers = {}
        if body is not None:
            data = body.encode() if isinstance(body, str) else \
                json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                raw = r.read()
                ctype = r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                err = json.loads(raw)["error"]
            except (ValueError, KeyError, TypeError):
                raise HloscopeError(e.code, "http", raw.decode(
                    "utf-8", "replace")[:500]) from None
            raise HloscopeError(e.code, err.get("code", "error"),
                                err.get("message", ""), err.get("path", ""),
                                err.get("line", 0), err.get("column", 0),
                                err.get("instruction")) from None
        if "json" in ctype:
            return self._absolute(json.loads(raw))
        return raw.decode("utf-8", "replace")

    def _absolute(self, obj):
        """Links in replies are paths on the server; make them URLs."""
        if isinstance(obj, dict):
            out = {}
            for k, v in obj.items():
                if k == "links" and isinstance(v, dict):
                    out[k] = {n: (self.url + u if isinstance(u, str) and
                                  u.startswith("/") else u)
                              for n, u in v.items()}
                else:
                    out[k] = self._absolute(v)
            return out
        if isinstance(obj, list):
            return [self._absolute(e) for e in obj]
        return obj

    def compile(self, model, **overrides):
        """POST /v1/compile; overrides are query parameters (loop,
        residuals, device, batch, mode)."""
        return self._request("POST", "/v1/compile", model, overrides)

    def run(self, model, **overrides):
        """POST /v1/run: compile and execute on the emulated device."""
        return self._request("POST", "/v1/run", model, overrides)

    def compare(self, model, a, b, **overrides):
        """POST /v1/compare of two variants (dicts of overrides)."""
        return self._request("POST", "/v1/compare",
                             {"model": model, "a": a, "b": b}, overrides)

    def result(self, result_id):
        return self._request("GET", f"/v1/results/{result_id}")

    def get(self, link):
        """GET a link of a summary (absolute or a server path)."""
        if link.startswith(self.url):
            link = link[len(self.url):]
        return self._request("GET", link)
