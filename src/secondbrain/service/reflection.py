"""gRPC server reflection, v1 as well as v1alpha, so every client can list and describe the services: grpcurl and
`buf curl` ask v1 first (and buf falls back to v1alpha only for some errors), older tools ask v1alpha.

grpcio-reflection implements v1alpha only. v1 is the same protocol under another package name: the same messages,
field for field, so their bytes are the same on the wire. So v1 is served by v1alpha's own servicer behind a second
method name, and v1's descriptor (v1alpha's, renamed) is added to the descriptor pool so that reflection can
describe itself under either name.

Through the gateway, one address serves every service, so Envoy sends reflection to one of them (chat) with the
GATEWAY_HEADER, and a request carrying it is answered for the whole API: every service listed, every one described.
Asked directly, a server lists only what it serves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2

V1ALPHA_SERVICE_NAME = reflection.SERVICE_NAME
V1_SERVICE_NAME = "grpc.reflection.v1.ServerReflection"
# Set by Envoy's route for reflection (gateway/envoy.yaml.template).
GATEWAY_HEADER = "x-secondbrain-via"
_V1ALPHA_PACKAGE = reflection_pb2.DESCRIPTOR.package
_V1_PACKAGE = "grpc.reflection.v1"
_V1_FILE = "grpc/reflection/v1/reflection.proto"


def _register_v1_descriptor() -> None:
    """Add v1's file descriptor (v1alpha's with the package renamed) to the default pool, once."""
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(_V1_FILE)
        return
    except KeyError:
        pass
    file = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(file)
    file.name, file.package = _V1_FILE, _V1_PACKAGE
    file.options.Clear()  # v1alpha's language options (Java package and the like) name v1alpha
    old, new = f".{_V1ALPHA_PACKAGE}.", f".{_V1_PACKAGE}."
    for message in file.message_type:
        for message_field in message.field:
            if message_field.type_name.startswith(old):
                message_field.type_name = new + message_field.type_name.removeprefix(old)
    for service in file.service:
        for method in service.method:
            method.input_type = new + method.input_type.removeprefix(old)
            method.output_type = new + method.output_type.removeprefix(old)
    pool.Add(file)


def _api_service_names() -> list[str]:
    """Every service of the API; importing their modules puts their descriptors in the pool."""
    from secondbrain.chat.v1 import chat_service_pb2
    from secondbrain.ingest.v1 import ingest_service_pb2
    from secondbrain.retrieve.v1 import retrieve_service_pb2

    return [
        service.full_name
        for module in (ingest_service_pb2, retrieve_service_pb2, chat_service_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
    ]


def enable_reflection(server: grpc.aio.Server, service_names: Sequence[str]) -> None:
    """Serve reflection, v1 and v1alpha, listing `service_names` (and reflection itself); through the gateway,
    the whole API."""
    _register_v1_descriptor()
    own = [*service_names, V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME]
    gateway = list(dict.fromkeys([*_api_service_names(), *own]))
    servicers = {False: reflection.aio.ReflectionServicer(own), True: reflection.aio.ReflectionServicer(gateway)}

    async def info(
        requests: AsyncIterator[reflection_pb2.ServerReflectionRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[reflection_pb2.ServerReflectionResponse]:
        via_gateway = any(key == GATEWAY_HEADER for key, _ in context.invocation_metadata() or ())
        async for response in servicers[via_gateway].ServerReflectionInfo(requests, context):
            yield response

    handler = grpc.stream_stream_rpc_method_handler(
        info,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        tuple(
            grpc.method_handlers_generic_handler(name, {"ServerReflectionInfo": handler})
            for name in (V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME)
        )
    )
