"""Drives `repo-agent mcp` with the official MCP Python SDK (`mcp` on PyPI).

Usage: python client.py REPO_AGENT_BINARY REPOSITORY
Prints one line per check; exits non-zero at the first that fails.
"""

import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def field(obj, *names):
    """The SDK's models went from camelCase to snake_case attributes."""
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    raise AttributeError("none of %s on %r" % (names, obj))


def text(result):
    return "\n".join(getattr(c, "text", "") for c in field(result, "content"))


def check(ok, what):
    if not ok:
        print("FAIL: " + what, flush=True)
        sys.exit(1)
    print("ok: " + what.splitlines()[0][:120], flush=True)


CALLS = [
    ("list_directory", {"path": "."}, "basket.py"),
    ("view_code", {"target": "shop.basket.Basket"}, "def total"),
    ("view_file", {"path": "shop/cli.py", "start_line": 1, "end_line": 8}, "def main"),
    ("search_code", {"query": "price"}, "shop.basket.price_of"),
    ("find_callers", {"name": "price_of"}, "shop.basket.Basket.total"),
    ("find_callees", {"name": "shop.cli.main"}, "Basket"),
    ("module_dependencies", {"module": "shop.web", "direction": "imports"}, "shop.basket"),
    ("dependency_path", {"from": "shop.cli", "to": "shop.basket"}, "shop.basket"),
    ("read_document", {"path": "README.md"}, "Prices baskets"),
    ("overview", {"task": "compute the total of a basket", "budget": 2000}, "Basket"),
    ("rank", {"top": 5}, "shop.basket"),
    ("routes", {}, "/total"),
    ("usage", {}, "shop-total"),
]


async def main(binary, repo):
    params = StdioServerParameters(
        command=binary,
        args=["mcp", "--repo", repo, "--no-cache"],
        env={"PATH": os.environ.get("PATH", ""), "REPO_AGENT_LOG": "warn"},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            server = field(info, "server_info", "serverInfo")
            check(server.name == "repo-agent", "initialize: server " + server.name)

            tools = field(await session.list_tools(), "tools")
            by_name = {t.name: t for t in tools}
            check(set(by_name) == {c[0] for c in CALLS}, "tools/list: %s" % sorted(by_name))
            for tool in tools:
                schema = field(tool, "input_schema", "inputSchema")
                check(schema.get("type") == "object", "schema of %s is an object" % tool.name)

            for name, arguments, expected in CALLS:
                # Every argument the call sends is a property of the schema.
                schema = field(by_name[name], "input_schema", "inputSchema")
                check(set(arguments) <= set(schema.get("properties", {})), "%s: arguments in its schema" % name)
                result = await session.call_tool(name, arguments)
                body = text(result)
                check(not field(result, "is_error", "isError"), "%s succeeds: %s" % (name, body[:200]))
                check(expected in body, "%s shows %r" % (name, expected))

            outside = await session.call_tool("view_file", {"path": "/etc/passwd"})
            body = text(outside)
            check(field(outside, "is_error", "isError") and "root:" not in body, "a path outside is refused: " + body[:200])

            basket = os.path.join(repo, "shop", "basket.py")
            with open(basket, "a") as f:
                f.write("\n\ndef apply_discount(total, rate):\n    return total * (1 - rate)\n")
            seen = text(await session.call_tool("search_code", {"query": "discount"}))
            check("shop.basket.apply_discount" in seen, "an edited file is seen on the next call")

            resources = field(await session.list_resources(), "resources")
            uris = [str(r.uri) for r in resources]
            check(any(u.endswith("/context") for u in uris), "resources/list: %d resources" % len(uris))
            whole = [u for u in uris if u.endswith("/context")][0]
            contents = field(await session.read_resource(whole), "contents")
            check("Prices baskets" in contents[0].text, "resources/read " + whole)
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
