"""What the LLM agent sends: request bodies, sampling parameters, answer constraints, the
chat URL and the headers, built from the agent's settings without sending anything.

Kept apart from the transports (like Inspect's ``_openai.py`` conversions) so that what goes
on the wire can be read and checked on its own: the aiohttp stream posts :meth:`RequestBuilder.body`,
litellm is called with :meth:`RequestBuilder.litellm_kwargs`, the Batch API gets
:meth:`RequestBuilder.batch_body`. The API key lives in a :class:`Secret` whose ``repr`` hides it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from coop_tui.agents.transport import endpoint_url, env_proxy, proxy_headers_for
from coop_tui.decisions import DecisionRequest
from coop_tui.redact import has_userinfo
from coop_tui.schemas import answer_budget, answer_grammar, answer_schema, grammar_schema

Transport = Literal["auto", "openai", "litellm"]
Constrained = Literal["grammar", "json_schema"]

OPENAI_COMPATIBLE_PREFIXES = frozenset(
    {"openai", "hosted_vllm", "openai-compatible", "openai_compatible", "custom_openai"}
)
"""Provider prefixes that mean "speaks the OpenAI chat API at ``api_base``"."""


def split_provider(model: str) -> tuple[str | None, str]:
    """``"openai/gpt-4o"`` -> ``("openai", "gpt-4o")``; ``"gpt-4o"`` -> ``(None, "gpt-4o")``."""
    if "/" in model:
        prefix, rest = model.split("/", 1)
        return prefix, rest
    return None, model


def choose_transport(model: str, api_base: str | None) -> Literal["openai", "litellm"]:
    """The openai SDK for OpenAI-compatible endpoints given by ``api_base``, else litellm."""
    prefix, _ = split_provider(model)
    if api_base and (prefix is None or prefix in OPENAI_COMPATIBLE_PREFIXES):
        return "openai"
    return "litellm"


class Secret:
    """Holds the API key; prints as ``***`` so it cannot leak through a repr or a log."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None) -> None:
        self._value = value or None

    def get(self) -> str | None:
        return self._value

    def scrub(self, text: str) -> str:
        return text.replace(self._value, "***") if self._value else text

    def __repr__(self) -> str:
        return "***" if self._value else "None"

    __str__ = __repr__


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One step of an answer as a transport sends it: the messages, the step's extra
    parameters (an answer constraint and its token budget), the JSON body for the aiohttp
    transport (empty on litellm's), and the server it goes to (set per attempt)."""

    messages: list[dict]
    extra: dict[str, Any]
    body: bytes = b""
    url: str | None = None

    def at(self, url: str | None) -> ChatRequest:
        """The same request for the server an attempt leased."""
        return replace(self, url=url)


class RequestBuilder:
    """Builds an agent's requests from its settings (one per agent; the chat URLs and their
    proxies are worked out once per endpoint and kept)."""

    def __init__(
        self,
        model: str,
        *,
        temperature: float | None,
        max_tokens: int | None,
        reasoning_effort: str | None,
        constrained: Constrained | None,
        key: Secret,
        api_bases: Sequence[str],
    ) -> None:
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.reasoning_effort = reasoning_effort
        self.constrained = constrained
        self.api_bases = list(api_bases)
        self._key = key
        self._chat_urls: dict[str, Any] = {}
        # The key goes on the HTTP session's headers, unless a server of the list is
        # reached with user:password@ (Basic auth from the URL, which must not meet a
        # bearer header): then it is added per request to the other servers. A proxy
        # from the environment sends it per request too (see session_headers).
        self._key_per_request = bool(key.get()) and any(has_userinfo(u) for u in api_bases)

    # -- the body ----------------------------------------------------------------------------

    def params(self) -> dict[str, Any]:
        """The sampling parameters the agent sets (none it leaves to the server)."""
        params: dict[str, Any] = {}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        if self.reasoning_effort is not None:
            params["reasoning_effort"] = self.reasoning_effort
        return params

    def constraint(self, request: DecisionRequest) -> tuple[dict[str, Any], int] | None:
        """Request parameters that constrain the answer to its schema, and a token budget;
        None for free-text kinds."""
        schema = request.schema
        if schema is None:
            schema = answer_schema(request.kind, request.labels, request.options)
        if schema is None:
            return None
        budget = answer_budget(schema)
        if self.constrained == "json_schema":
            fmt = {"name": "answer", "schema": grammar_schema(schema), "strict": True}
            return {"response_format": {"type": "json_schema", "json_schema": fmt}}, budget
        kind, payload = answer_grammar(request.kind, request.labels, schema)
        grammar = payload if kind == "gbnf" else _schema_gbnf(payload)
        return {"grammar": grammar}, budget

    def model_name(self) -> str:
        """The model as the server knows it: without an OpenAI-compatible provider prefix."""
        prefix, name = split_provider(self.model)
        return name if prefix in OPENAI_COMPATIBLE_PREFIXES else self.model

    def body(self, messages: list[dict], extra: dict[str, Any]) -> bytes:
        """The streamed chat completion's JSON body, as the aiohttp transport posts it."""
        payload = {
            "model": self.model_name(),
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            **self.params(),
            **extra,
        }
        return json.dumps(payload).encode()

    def batch_body(self, messages: list[dict], extra: dict[str, Any]) -> dict[str, Any]:
        """One request of a Batch API batch (not streamed)."""
        return {"model": self.model_name(), "messages": messages, **self.params(), **extra}

    def litellm_kwargs(self, url: str | None, extra: dict[str, Any]) -> dict[str, Any]:
        """The parameters, server and key for ``litellm.acompletion`` (a grammar goes in
        ``extra_body``: litellm knows no such parameter)."""
        kwargs: dict[str, Any] = dict(self.params())
        params = dict(extra)
        if "grammar" in params:
            kwargs["extra_body"] = {"grammar": params.pop("grammar")}
        kwargs.update(params)
        if url:
            kwargs["api_base"] = url
        if self._key.get():
            kwargs["api_key"] = self._key.get()
        elif url and split_provider(self.model)[0] in OPENAI_COMPATIBLE_PREFIXES:
            # a keyless local server: litellm's OpenAI provider refuses to send without a
            # key, and must not fall back to OPENAI_API_KEY for a server that is not OpenAI
            kwargs["api_key"] = "no-key"
        return kwargs

    # -- where it goes and its headers ---------------------------------------------------------

    def chat_url(self, url: str) -> tuple[Any, Any, Any]:
        """``{api_base}/chat/completions`` as a parsed URL with the environment's proxy for
        it (and its credentials' header), worked out once per endpoint."""
        known = self._chat_urls.get(url)
        if known is None:
            from yarl import URL

            target = URL(endpoint_url(url, "chat/completions"))
            known = self._chat_urls[url] = (target, *env_proxy(target))
        return known

    def session_headers(self) -> dict[str, str]:
        """Headers of every request, set once when the endpoint pool's session is made.

        The key is among them only when no server of the agent is reached through a
        proxy: aiohttp copies a session's headers into the proxy's own, and moves an
        ``Authorization`` there to ``Proxy-Authorization`` (on the ``CONNECT`` of an https
        tunnel too): the proxy would get ``Bearer <API key>`` in place of its own
        credentials. Through a proxy the key goes with each request, to the server.
        """
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self._key.get() and any(self.chat_url(u)[1] is not None for u in self.api_bases):
            self._key_per_request = True
        if self._key.get() and not self._key_per_request:
            headers["Authorization"] = f"Bearer {self._key.get()}"
        return headers

    def request_headers(
        self, target: Any, proxy_headers: Any
    ) -> tuple[dict[str, str] | None, Any]:
        """The headers one request adds to its session's, and its proxy's headers: the key
        when it goes per request (never to a URL with ``user:password@``, which is sent
        with Basic auth instead)."""
        headers = None
        if self._key_per_request and target.user is None:
            headers = {"Authorization": f"Bearer {self._key.get()}"}
        if proxy_headers is not None:
            headers, proxy_headers = proxy_headers_for(target, proxy_headers, headers)
        return headers, proxy_headers


@functools.cache
def _schema_gbnf(schema_json: str) -> str:
    """GBNF text for a JSON schema, by llama.cpp's own converter (pure Python)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(schema_json)
