"""A webhook receiver, run as its own process: `python webhook_receiver.py PORT SECRET
FOLDER`. It checks each POST's HMAC-SHA256 signature (as the serving guide's example
does), then answers as `FOLDER/mode` says at that moment: `ok` (200), `fail` (500) or
`slow` (answers after 30 s: the sender times out first). Every POST is appended to
`FOLDER/received.jsonl`: the mode, the event id and type, the attempt, whether the
signature was right; and each event it answered 200 to, whole, to `FOLDER/bodies.jsonl`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def verified(secret: bytes, header: str, body: bytes, tolerance: float = 300) -> bool:
    """`t=TIME,v1=HEX`: HEX must be HMAC-SHA256(secret, "TIME." + body), TIME recent."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    stamp, given = fields.get("t", ""), fields.get("v1", "")
    if not stamp.isdigit() or abs(time.time() - int(stamp)) > tolerance:
        return False
    expected = hmac.new(secret, f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, given)


def main() -> None:
    port, secret, folder = int(sys.argv[1]), sys.argv[2].encode(), Path(sys.argv[3])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            mode = (folder / "mode").read_text().strip()
            event = json.loads(body)
            seen = {
                "mode": mode,
                "id": event["id"],
                "type": event["type"],
                "header_id": self.headers["x-cgraph-event-id"],
                "attempt": int(self.headers["x-cgraph-attempt"]),
                "valid": verified(secret, self.headers.get("x-cgraph-signature", ""), body),
            }
            with (folder / "received.jsonl").open("a") as out:
                out.write(json.dumps(seen) + "\n")
            if mode == "slow":
                time.sleep(30)
            accepted = mode == "ok" and seen["valid"]
            if accepted:
                with (folder / "bodies.jsonl").open("a") as out:
                    out.write(json.dumps(event) + "\n")
            self.send_response(200 if accepted else 500)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    (folder / "ready").write_text("yes")
    server.serve_forever()


if __name__ == "__main__":
    main()
