"""Every page and GET route on odd query parameters: never a 500 (quality.md, Bad input). Query parameters are the
one input no form or JSON body checks before a view reads it (page numbers, row ranges, a model, a revision)."""

import re

from django.urls import URLPattern, URLResolver, get_resolver

from tests.web.conftest import client_for

ODD_QUERIES = ["?page=-1", "?page=abc", "?page=99999999999999999999999", "?start=-5&stop=abc&first=0&last=999999999",
               "?q=%00", "?q=" + "x" * 5000, "?model=nope&strategy=nope&revision=zzz", "?golden=abc&session=abc",
               "?a=1&a=2&kind=nope&sort=__class__", "?offset=1e309&from=%ff&rows=-3"]


def _routes(resolver, prefix=""):
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern)


def _url(route: str, world) -> str:
    """The route with its parameters filled from the world: a strategy slug, the session, the golden."""
    def value(found):
        name = found.group(2)
        if name == "slug":
            return world["own"].slug
        return str(world["golden"].pk if "golden" in name else world["session"].pk)
    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", value, route)


def test_no_get_route_answers_odd_query_parameters_with_a_500(world, users):
    client = client_for(users["admin"])
    urls = [_url(route, world) for route in _routes(get_resolver()) if not route.startswith(("admin/", "static"))]
    pages = [url for url in urls if client.get(url).status_code == 200]
    assert len(pages) >= 30  # the sweep reaches the real pages of the world's objects, not just their 404s
    failed = [(response.status_code, url + query[:40], htmx) for url in urls for query in ODD_QUERIES
              for htmx in (False, True)
              if (response := client.get(url + query, **({"HTTP_HX_REQUEST": "true"} if htmx else {}))
                  ).status_code >= 500]
    assert not failed, failed[:20]
