"""Field types of Kubernetes API objects, for the pydantic models of the kinds pykai defines
(Queue, PodGroup, BindRequest, SchedulingShard): each carries the OpenAPI its CRD gives it
(model/crds.py)."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, StringConstraints, WithJsonSchema

from pykai.model.quantity import PATTERN

API_CONFIG = ConfigDict(extra="forbid", populate_by_name=True, use_attribute_docstrings=True)
"""Fields by their API names (aliases) or Python names, none other (a CRD prunes unknown
fields: an object pykai writes must have none); attribute docstrings are the descriptions
``kubectl explain`` shows."""

Int32 = Annotated[int, Field(json_schema_extra={"format": "int32"})]
Int64 = Annotated[int, Field(json_schema_extra={"format": "int64"})]
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]

QuantityString = Annotated[
    str,
    StringConstraints(pattern=PATTERN),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": PATTERN,
            "x-kubernetes-int-or-string": True,
        }
    ),
]
"""A quantity (``500m``, ``6G``, ``1Gi``) as CRDs declare one: an integer or a string of
apimachinery's quantity pattern."""

ResourceList = dict[str, QuantityString]
"""Amounts by resource name (``cpu``, ``memory``, ``nvidia.com/gpu``)."""
