"""Client for the petstore service and its admin API, standard library only.

``Client`` talks HTTP to a running service (the /v1 API and every /__admin call), ``Service``
starts one as a process for tests, and the pytest plugin (``petstore_client.pytest_plugin``,
loaded by pytest when the package is installed) gives each test a client bound to a fresh
namespace of one shared service.
"""
from .client import Client
from .response import Response
from .errors import BrokenAnswer, PetstoreError, ServiceStartError
from .service import Service, find_bundle

__all__ = ["BrokenAnswer", "Client", "PetstoreError", "Response", "Service", "ServiceStartError", "find_bundle"]
__version__ = "1.0.0"
