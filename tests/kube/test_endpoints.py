"""The JSON endpoints of ``pykai run`` (the queues' pending PodGroups, Kueue's visibility API)
read a page and refuse a bad one alike, with the Status an apiserver answers."""

from __future__ import annotations

from pykai.kube.endpoints import Page, failure, page
from pykai.kube.pending import PendingBoard, route
from pykai.kube.visibility import Visibility

PENDING = "/apis/pykai.io/v1/queues/q/pendingpodgroups"
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"


def test_a_page_is_read_as_given_or_refused_as_a_bad_request() -> None:
    assert page("", 1000) == Page(1000, 0)
    assert page("limit=5&offset=-2", 1000) == Page(5, -2)  # bounds are the endpoint's
    assert page("offset=x", 1000) == failure(
        400, "BadRequest", "limit and offset must be whole numbers"
    )


def test_both_endpoints_refuse_a_bad_page_with_the_same_status() -> None:
    by_pending = route(PendingBoard(wait=0.0), PENDING, "limit=x")
    by_visibility = Visibility().answer(f"{VISIBILITY}?limit=x")
    assert (
        by_pending
        == by_visibility
        == failure(400, "BadRequest", "limit and offset must be whole numbers")
    )
    code, status = failure(404, "NotFound", 'queues.scheduling.run.ai "q" not found')
    assert code == status["code"] == 404
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'queues.scheduling.run.ai "q" not found',
        "reason": "NotFound",
        "code": 404,
    }
