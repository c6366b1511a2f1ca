"""A real gateway between boto3's ``bedrock-runtime`` client and a scripted Bedrock runtime
speaking Converse, on loopback; and the tool loop a boto3 agent runs (as Strands' Bedrock model
and LangChain's ``ChatBedrockConverse`` do: ``converse`` / ``converse_stream``, the assistant
message appended, each ``toolUse`` run and answered by a ``toolResult`` in the next user turn)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.config import Config as BotoConfig

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from support import sigv4_check
from support.converse_upstream import MODEL, ConverseUpstream
from support.policies import ladder_policy
from support.servers import serve

REGION = "us-east-1"
GATEWAY_AWS = {"AWS_ACCESS_KEY_ID": sigv4_check.ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": sigv4_check.SECRET_KEY}
CLIENT_KEYS = {"aws_access_key_id": "AKIDCLIENTEXAMPLE", "aws_secret_access_key": "client-secret"}
TOOLS = {
    "tools": [
        {
            "toolSpec": {
                "name": "read_file",
                "description": "Read a file.",
                "inputSchema": {"json": {"type": "object", "properties": {"path": {"type": "string"}}}},
            }
        }
    ]
}


def client_for(url: str) -> Any:
    """boto3's Bedrock runtime client at ``url`` (the gateway's ``/bedrock``, or the cloud)."""
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=url,
        region_name=REGION,
        config=BotoConfig(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=30, connect_timeout=5),
        **CLIENT_KEYS,
    )


def streamed_message(events: Any) -> tuple[dict[str, Any], str]:
    """A ``converse_stream`` answer accumulated as Strands does: (message, stop reason)."""
    content: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    text, tool_input, stop = "", "", ""
    for event in events:
        if "contentBlockStart" in event:
            use = event["contentBlockStart"]["start"]["toolUse"]
            current, tool_input = {"toolUseId": use["toolUseId"], "name": use["name"]}, ""
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"]["delta"]
            if "toolUse" in delta:
                tool_input += delta["toolUse"]["input"]
            elif "text" in delta:
                text += delta["text"]
        elif "contentBlockStop" in event:
            if current is not None:
                content.append({"toolUse": {**current, "input": json.loads(tool_input or "{}")}})
                current = None
            elif text:
                content.append({"text": text})
                text = ""
        elif "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
    return {"role": "assistant", "content": content}, stop


def run_agent(client: Any, stream: bool, limit: int = 20, model: str = MODEL) -> tuple[str, int]:
    """The agent loop: (its final text, the tool calls it executed)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "summarize a.txt"}]}]
    executions = 0
    for _ in range(limit):
        if stream:
            answer = client.converse_stream(modelId=model, messages=messages, toolConfig=TOOLS)
            message, stop = streamed_message(answer["stream"])
        else:
            answer = client.converse(modelId=model, messages=messages, toolConfig=TOOLS)
            message, stop = answer["output"]["message"], answer["stopReason"]
        calls = [b["toolUse"] for b in message["content"] if "toolUse" in b]
        if stop != "tool_use" or not calls:
            return "".join(b.get("text", "") for b in message["content"]), executions
        messages.append(message)
        executions += len(calls)
        messages.append(
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": c["toolUseId"], "content": [{"text": "the same content"}]}}
                    for c in calls
                ],
            }
        )
    raise AssertionError("the run never ended")


@pytest.fixture
def start_converse(tmp_path, monkeypatch):
    """Start (scripted Bedrock runtime, gateway); returns (upstream, boto3 client, gateway url)."""
    contexts = []
    # Only what a test gives: no profile file, no instance metadata service to wait for.
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)

    def start(responder, policy_text: str | None = None, config: dict | None = None, signed: bool = True, **upstream):
        """``signed``: the gateway holds the scripted AWS credentials (botocore's chain reads
        them from the environment) and the scripted cloud checks every signature with them."""
        for name, value in GATEWAY_AWS.items():
            if signed:
                monkeypatch.setenv(name, value)
            else:
                monkeypatch.delenv(name, raising=False)
        scripted = ConverseUpstream(responder, signed)
        ctx = serve(scripted.app)
        url = ctx.__enter__()
        contexts.append(ctx)
        policy = tmp_path / "policy.yaml"
        policy.write_text(policy_text or ladder_policy())
        settings = Config.model_validate(
            {
                "upstream": {"base_url": "http://127.0.0.1:9/v1", "bedrock_base_url": url, **upstream},
                **(config or {}),
            }
        )
        ctx = serve(build_app(settings, policies=PolicyHolder(policy)), **SERVER_OPTIONS)
        gateway = ctx.__enter__()
        contexts.append(ctx)
        return scripted, client_for(gateway + "/bedrock"), gateway

    yield start
    for ctx in reversed(contexts):
        ctx.__exit__(None, None, None)
