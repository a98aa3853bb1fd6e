"""The OTLP/gRPC receiver (`--grpc HOST:PORT`): the Collector's load-balancing exporter routes
by trace id over gRPC only. The same intake as the HTTP receiver; push-back is UNAVAILABLE
(503) or RESOURCE_EXHAUSTED (429) with a RetryInfo, which OTLP/gRPC exporters retry."""

from __future__ import annotations

from concurrent import futures
from typing import Any

import grpc

from otel_agent_trace.serve.decode import JSON, BadRequest
from otel_agent_trace.serve.receiver import MAX_BODY_BYTES, Intake


def start_grpc(listen: tuple[str, int], intake: Intake) -> tuple[Any, int]:
    """A started gRPC server and its port (port 0: any free one). Raises OSError when it cannot bind."""
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    from otel_agent_trace.serve.decode import message_as_json

    class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 - the service's name
            refused, rejected, message = intake.admit(), 0, ""
            if refused is None:
                try:
                    refused, rejected, message = intake.take(message_as_json(request), JSON)
                except BadRequest as exc:
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            if refused is not None:
                _push_back(context, refused, intake.retry_after)
            response = ExportTraceServiceResponse()
            if rejected or message:
                response.partial_success.rejected_spans = rejected
                response.partial_success.error_message = message or f"{rejected} spans over a cap or late"
            return response

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="agent-trace-serve-grpc"),
                         options=[("grpc.max_receive_message_length", MAX_BODY_BYTES)])  # (gRPC's default: 4 MiB)
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(TraceService(), server)
    try:
        port = server.add_insecure_port(f"{listen[0]}:{listen[1]}")
    except RuntimeError as exc:
        raise OSError(str(exc)) from None
    server.start()
    return server, port


def _push_back(context: Any, status: int, retry_after: int) -> None:
    """Abort with a RetryInfo in the status details, as the OTLP/gRPC specification asks."""
    from google.protobuf.duration_pb2 import Duration
    from google.rpc import code_pb2, error_details_pb2, status_pb2

    code = code_pb2.UNAVAILABLE if status == 503 else code_pb2.RESOURCE_EXHAUSTED
    info = error_details_pb2.RetryInfo(retry_delay=Duration(seconds=retry_after))
    detail = status_pb2.Status(code=code, message="shutting down" if status == 503 else "the analysis is behind")
    detail.details.add().Pack(info)
    context.abort_with_status(_RichStatus(grpc.StatusCode.UNAVAILABLE if status == 503 else
                                          grpc.StatusCode.RESOURCE_EXHAUSTED, detail))


class _RichStatus(grpc.Status):
    """A grpc.Status with its google.rpc.Status in the trailing metadata (`grpc-status-details-bin`)."""

    def __init__(self, code: Any, detail: Any) -> None:
        self.code = code
        self.details = detail.message
        self.trailing_metadata = (("grpc-status-details-bin", detail.SerializeToString()),)
