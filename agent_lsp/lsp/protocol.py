"""A protocol that answers a request it cannot read with an error instead of silence.

pygls raises while decoding a request whose params do not fit the LSP types, and the client then
waits for an answer that never comes (10 s in lsp-mode, 20 s in Helix, forever in Eglot)."""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types as t
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification

log = logging.getLogger(__name__)
IGNORED = {"jsonrpc": "2.0", "method": "$/agent-lsp/unreadable", "params": None}


class AgentProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            method = data.get("method")
            log.warning("unreadable %s message: %s", method or "response", exc)
            if "id" in data and method:
                self._send_response(
                    data["id"],
                    error=t.ResponseError(
                        code=exc.code, message=f"agent-lsp could not read the {method} request"
                    ),
                )
            return self._converter.structure(IGNORED, JsonRPCNotification)
