"""A list page's rows and its links to the pages beside it (studio.paging)."""

from django.test import RequestFactory

from studio.paging import SEARCH_CHARS, list_page, search_text

ROWS = list(range(1, 251))


def _page(query: str = "", **kwargs):
    return list_page(RequestFactory().get(f"/list/{query}"), ROWS, **kwargs)


def test_the_first_page_shows_the_first_hundred_and_links_to_the_next():
    page = _page()
    assert page.rows == list(range(1, 101)) and (page.first, page.last, page.count) == (1, 100, 250)
    assert page.previous_url is None and page.next_url == "?page=2" and page.paged


def test_a_middle_page_keeps_the_rest_of_the_query_in_its_links():
    page = _page("?q=gate&page=2")
    assert page.rows == list(range(101, 201)) and (page.first, page.last) == (101, 200)
    assert page.previous_url == "?q=gate&page=1" and page.next_url == "?q=gate&page=3"


def test_a_number_that_is_not_one_gives_the_first_page_and_one_past_the_end_the_last():
    assert [_page(f"?page={asked}").rows[0] for asked in ("abc", "-4", "0", "1e3", "9" * 5000)] == [1] * 5
    last = _page("?page=999")
    assert last.rows == list(range(201, 251)) and last.next_url is None and last.previous_url == "?page=2"


def test_each_list_of_a_page_reads_its_own_number():
    page = _page("?preset_page=3&page=1", param="preset_page")
    assert page.rows[0] == 201 and page.previous_url == "?preset_page=2&page=1"


def test_a_short_or_empty_list_is_one_page_without_links():
    short = list_page(RequestFactory().get("/list/"), [1, 2, 3])
    empty = list_page(RequestFactory().get("/list/"), [])
    assert short.rows == [1, 2, 3] and not short.paged
    assert empty.rows == [] and (empty.first, empty.last, empty.count) == (0, 0, 0) and not empty.paged


def test_a_search_is_trimmed_and_bounded():
    assert search_text(RequestFactory().get("/list/", {"q": "  gate  "}).GET) == "gate"
    assert search_text(RequestFactory().get("/list/", {"q": "ga\x00te"}).GET) == "gate"
    assert len(search_text(RequestFactory().get("/list/", {"q": "x" * 5000}).GET)) == SEARCH_CHARS
