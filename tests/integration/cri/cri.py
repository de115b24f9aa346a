#!/usr/bin/python3
"""A minimal CRI client for the containerd tests: one call per run.

    cri.py SOCKET METHOD 'REQUEST_JSON'

METHOD is a RuntimeService method of cri.proto (RunPodSandbox,
CreateContainer, ...); the request and the printed response are the
messages in proto JSON form with the proto field names.  A gRPC error
prints its status and message on stderr ("RunPodSandbox: UNKNOWN: ...")
and exits 1.  Stubs are generated from cri.proto with grpc_tools into a
cache directory (CRI_STUBS), once.
"""
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
stubs = os.environ.get("CRI_STUBS") or os.path.join(tempfile.gettempdir(), "tollgate-cri-stubs")
proto = os.path.join(here, "cri.proto")


def load_stubs():
    stamp = os.path.join(stubs, "cri.proto")
    want = open(proto).read()
    if not (os.path.exists(stamp) and open(stamp).read() == want):
        os.makedirs(stubs, exist_ok=True)
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", here,
                        "--python_out", stubs, "--grpc_python_out", stubs, proto], check=True)
        with open(stamp, "w") as f:
            f.write(want)
    sys.path.insert(0, stubs)
    import cri_pb2
    import cri_pb2_grpc
    return cri_pb2, cri_pb2_grpc


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sock, method, request = sys.argv[1:]
    import grpc
    from google.protobuf import json_format
    pb, pb_grpc = load_stubs()
    req_cls = getattr(pb, method + "Request", None)
    if req_cls is None:
        sys.exit(f"cri.py: unknown method {method}")
    req = json_format.ParseDict(json.loads(request), req_cls())
    with grpc.insecure_channel("unix://" + sock) as ch:
        stub = pb_grpc.RuntimeServiceStub(ch)
        try:
            resp = getattr(stub, method)(req, timeout=float(os.environ.get("CRI_TIMEOUT", "120")))
        except grpc.RpcError as e:
            print(f"{method}: {e.code().name}: {e.details()}", file=sys.stderr)
            sys.exit(1)
    print(json.dumps(json_format.MessageToDict(resp, preserving_proto_field_name=True,
                                                   including_default_value_fields=True)))


if __name__ == "__main__":
    main()
