"""pydantic's lax bool, as vLLM's request models apply it, for LaxBooleanTest.

Reads one JSON value per line on stdin; writes one line per value: "true", "false", or the error
type (bool_type, bool_parsing). FastAPI hands pydantic the body as json.loads parsed it, so the
values are validated as Python input (validate_python), not as JSON.
"""
import json
import sys
from typing import Optional

from pydantic import BaseModel, ValidationError


class Request(BaseModel):
    b: bool = False


class OptionalRequest(BaseModel):
    b: Optional[bool] = False


for line in sys.stdin:
    value = json.loads(line)
    try:
        out = "true" if Request.model_validate({"b": value}).b else "false"
    except ValidationError as e:
        out = e.errors()[0]["type"]
    try:
        o = OptionalRequest.model_validate({"b": value}).b
        opt = "none" if o is None else ("true" if o else "false")
    except ValidationError as e:
        opt = e.errors()[0]["type"]
    print(out, opt)
