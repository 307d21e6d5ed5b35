"""The Workbench simulator's gRPC face: the transport the real client uses by default.

``NotebookServiceClient()`` with no arguments talks gRPC to notebooks.googleapis.com,
so this is the wire production uses. Each RPC is translated into the REST request it
corresponds to (the path template from the API's HTTP rules) and handed to the same
``WorkbenchSimulator.handle``: one state machine, one set of faults and latency, one
call log for both transports. Answers go back as protobuf, errors as gRPC status codes
(NOT_FOUND, FAILED_PRECONDITION, UNAVAILABLE...), as the live API sends them.

Served:
- ``google.cloud.notebooks.v2.NotebookService``: GetInstance, ListInstances,
  UpdateInstance, ResetInstance, StartInstance, StopInstance;
- ``google.longrunning.Operations``: GetOperation (what ``op.done()`` / ``op.result()``
  poll, and the client's ``get_operation`` mixin) and ListOperations (``list_operations``).
Any other method: UNIMPLEMENTED, as gRPC answers for a method a server does not have.

Fields the installed protos don't know (``enableDeletionProtection``, ``gceSetup.minCpuPlatform``)
go out as unknown fields, as they arrive from the live gRPC API (inside an operation's
``response`` too), and protobuf keeps them without complaint: the REST transport's ParseError
trap (docs/checked-facts.md) does not exist on gRPC, and the tests show it rather than assume it.
"""

from __future__ import annotations

import functools
import json
import logging
import zlib
from collections.abc import Callable
from concurrent import futures
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

import grpc
from google.cloud import notebooks_v2
from google.longrunning import operations_pb2
from google.protobuf import field_mask_pb2, json_format

from simulators.workbench.errors import AbortError, SimulatorError

if TYPE_CHECKING:
    from simulators.workbench.api import ApiState as WorkbenchSimulator  # what it serves: handle(), nothing more

log = logging.getLogger(__name__)

NOTEBOOK_SERVICE = "google.cloud.notebooks.v2.NotebookService"
OPERATIONS_SERVICE = "google.longrunning.Operations"

UNKNOWN_FIELD_BASE = 9000  # field numbers for what the installed protos don't know (theirs stay far below)
Rest = tuple[str, str, bytes]  # HTTP method, path with query, body
# An RPC: its request's parser, the request as a REST call, the REST answer as protobuf bytes.
Method = tuple[Callable[[bytes], Any], Callable[[Any], Rest], Callable[[dict[str, Any]], bytes]]


def _path(name: str) -> str:
    return "/v2/" + quote(name, safe="/")


def _get(request: Any) -> Rest:
    """GetInstance and GetOperation alike: GET /v2/{name}."""
    return "GET", _path(request.name), b""


def _list_instances(request: Any) -> Rest:
    query = {"pageSize": request.page_size, "pageToken": request.page_token, "filter": request.filter,
             "orderBy": request.order_by}
    encoded = urlencode({k: v for k, v in query.items() if v})
    return "GET", _path(request.parent) + "/instances" + (f"?{encoded}" if encoded else ""), b""


def _list_operations(request: Any) -> Rest:
    query = {"pageSize": request.page_size, "pageToken": request.page_token, "filter": request.filter}
    encoded = urlencode({k: v for k, v in query.items() if v})
    return "GET", _path(request.name) + "/operations" + (f"?{encoded}" if encoded else ""), b""


def _update_instance(request: Any) -> Rest:
    instance = notebooks_v2.Instance.pb(request.instance)
    mask = field_mask_pb2.FieldMask(paths=list(request.update_mask.paths))
    body = json_format.MessageToJson(instance).encode()
    return "PATCH", _path(request.instance.name) + "?" + urlencode({"updateMask": mask.ToJsonString()}), body


def _lifecycle(verb: str) -> Callable[[Any], Rest]:
    def translate(request: Any) -> Rest:
        return "POST", _path(request.name) + f":{verb}", b""

    return translate


@functools.lru_cache(maxsize=4096)
def _instance_bytes(canonical_json: str) -> bytes:
    payload = json.loads(canonical_json)
    message = notebooks_v2.Instance.pb(notebooks_v2.Instance())
    json_format.ParseDict(payload, message, ignore_unknown_fields=True)
    # What the protos don't know travels as unknown fields, as on the live API; protobuf keeps them.
    message.MergeFromString(_unknown_fields(payload, message.DESCRIPTOR))
    gce_setup = payload.get("gceSetup")
    if isinstance(gce_setup, dict):
        message.gce_setup.MergeFromString(_unknown_fields(gce_setup, message.gce_setup.DESCRIPTOR))
    return bytes(message.SerializeToString())


def _unknown_fields(payload: dict[str, Any], descriptor: Any) -> bytes:
    """Each key the message doesn't have, encoded as a length-delimited field of a number it doesn't use."""
    known = {field.json_name for field in descriptor.fields} | {"@type"}
    out = b""
    for key in sorted(set(payload) - known):
        number = UNKNOWN_FIELD_BASE + zlib.crc32(key.encode()) % 1000
        value = json.dumps(payload[key]).encode()
        out += _varint(number << 3 | 2) + _varint(len(value)) + value
    return out


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _as_instance(payload: dict[str, Any]) -> bytes:
    """json_format costs about 0.2 ms an instance, which would count as the API's time in a benchmark
    listing a fleet: an instance that has not changed since it was last sent is converted once."""
    return _instance_bytes(json.dumps(payload, sort_keys=True))


def _as_list(payload: dict[str, Any]) -> bytes:
    message = notebooks_v2.ListInstancesResponse.pb(notebooks_v2.ListInstancesResponse())
    json_format.ParseDict({k: v for k, v in payload.items() if k != "instances"}, message, ignore_unknown_fields=True)
    for instance in payload.get("instances", []):
        message.instances.add().MergeFromString(_as_instance(instance))
    return bytes(message.SerializeToString())


def _as_operation(payload: dict[str, Any]) -> bytes:
    message = operations_pb2.Operation()
    json_format.ParseDict({k: v for k, v in payload.items() if k != "response"}, message, ignore_unknown_fields=True)
    response = payload.get("response")
    if isinstance(response, dict):  # packed by hand, so that the Instance inside keeps its unknown fields
        message.response.type_url = str(response.get("@type", ""))
        message.response.value = _as_instance(response)
    return bytes(message.SerializeToString())


def _as_operations(payload: dict[str, Any]) -> bytes:
    message = operations_pb2.ListOperationsResponse(next_page_token=str(payload.get("nextPageToken", "")))
    for operation in payload.get("operations", []):
        message.operations.add().MergeFromString(_as_operation(operation))
    return bytes(message.SerializeToString())


def _deserializer(message_type: Any) -> Callable[[bytes], Any]:
    return message_type.deserialize  # type: ignore[no-any-return]


_NOTEBOOK_METHODS: dict[str, Method] = {
    "GetInstance": (_deserializer(notebooks_v2.GetInstanceRequest), _get, _as_instance),
    "ListInstances": (_deserializer(notebooks_v2.ListInstancesRequest), _list_instances, _as_list),
    "UpdateInstance": (_deserializer(notebooks_v2.UpdateInstanceRequest), _update_instance, _as_operation),
    "ResetInstance": (_deserializer(notebooks_v2.ResetInstanceRequest), _lifecycle("reset"), _as_operation),
    "StartInstance": (_deserializer(notebooks_v2.StartInstanceRequest), _lifecycle("start"), _as_operation),
    "StopInstance": (_deserializer(notebooks_v2.StopInstanceRequest), _lifecycle("stop"), _as_operation),
}
_OPERATION_METHODS: dict[str, Method] = {
    "GetOperation": (operations_pb2.GetOperationRequest.FromString, _get, _as_operation),
    "ListOperations": (operations_pb2.ListOperationsRequest.FromString, _list_operations, _as_operations),
}
_SERVICES = {NOTEBOOK_SERVICE: _NOTEBOOK_METHODS, OPERATIONS_SERVICE: _OPERATION_METHODS}


class _Handler(grpc.GenericRpcHandler):  # type: ignore[misc]  # grpc ships no types
    def __init__(self, sim: WorkbenchSimulator) -> None:
        self._sim = sim

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        service, _, method = handler_call_details.method.lstrip("/").partition("/")
        entry = _SERVICES.get(service, {}).get(method)
        if entry is None:
            return None  # grpc answers UNIMPLEMENTED
        parse, translate, render = entry

        def serve(request: Any, context: grpc.ServicerContext) -> bytes:
            return self._serve(translate(request), render, context)

        return grpc.unary_unary_rpc_method_handler(serve, request_deserializer=parse)

    def _serve(
        self, rest: Rest, render: Callable[[dict[str, Any]], bytes], context: grpc.ServicerContext
    ) -> bytes:
        http_method, path, body = rest
        try:
            _, payload = self._sim.handle(http_method, path, body, grpc=True)
            return render(payload)
        except SimulatorError as err:
            context.abort(getattr(grpc.StatusCode, err.grpc_status, grpc.StatusCode.UNKNOWN), str(err))
        except AbortError:
            context.abort(grpc.StatusCode.UNAVAILABLE, "The simulator is shutting down.")
        except Exception as exc:  # a simulator bug: report it as Google would
            log.exception("workbench simulator (gRPC) failed on %s %s", http_method, path)
            context.abort(grpc.StatusCode.INTERNAL, f"Simulator error: {exc!r}")
        raise AssertionError("unreachable: context.abort raises")


def serve(sim: WorkbenchSimulator, port: int = 0) -> tuple[grpc.Server, int]:
    """A plaintext gRPC server on 127.0.0.1 for the simulator; returns it started, with its port."""
    # Enough threads for requests parked in a "timeout" fault or latency while others are answered.
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="workbench-grpc"))
    server.add_generic_rpc_handlers((_Handler(sim),))
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    return server, bound
