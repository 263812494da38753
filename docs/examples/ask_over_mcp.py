"""Start `regulator mcp` in a repository, list its tools, read the conventions, ask a person."""

import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def main(repository: str) -> None:
    server = StdioServerParameters(command="regulator", args=["mcp"], cwd=repository)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        print("tools:", ", ".join(tool.name for tool in listed.tools))

        conventions = await session.call_tool("read_conventions", {})
        print("read_conventions:", conventions.content[0].text)

        async def waiting(progress: float, total: float | None, message: str | None) -> None:
            print("  progress:", message)

        answer = await session.call_tool(
            "ask_human",
            {
                "kind": "consent",
                "subject": "drop the old sessions table",
                "question": "May I drop the sessions table? Nothing has read it since March.",
                "action": "DROP TABLE sessions on the staging database",
            },
            progress_callback=waiting,
        )
        print("ask_human:", answer.structured_content)

        told = await session.call_tool("notify_owner", {"message": "sessions table: see the room"})
        print("notify_owner:", "isError" if told.is_error else "ok", told.content[0].text)


anyio.run(main, sys.argv[1])
