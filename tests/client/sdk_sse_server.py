"""The benchmark SDK server (benchmarks/servers/sdk_server.py) on the SDK's legacy HTTP+SSE
transport (2024-11-05). Usage: python sdk_sse_server.py PORT"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "servers"))

from sdk_server import mcp

if __name__ == "__main__":
    mcp.run("sse", host="127.0.0.1", port=int(sys.argv[1]), sse_path="/sse")
