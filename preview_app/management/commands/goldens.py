import sys

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from assembly.errors import CodedError
from preview_app.access import session_for_read
from preview_app.goldens import golden_status
from preview_app.models import GoldenSnapshot
from preview_app.services import golden_approve
from strategies_app.access import revision_for_read, strategy_for_read


class Command(BaseCommand):
    help = ("goldens check [--session S]: compare every golden snapshot with a fresh run; exit 1 on any "
            "difference, printing the diff. goldens approve --session S [--strategy SLUG [--revision SHA]] "
            "[--user U]: record the current result (default: the session's applied revision).")

    def add_arguments(self, parser):
        parser.add_argument("action", choices=("check", "approve"))
        parser.add_argument("--session", type=int)
        parser.add_argument("--strategy")
        parser.add_argument("--revision")
        parser.add_argument("--user", help="who approves (username)")

    def handle(self, *args, **options):
        try:
            if options["action"] == "check":
                self._check(options["session"])
            else:
                self._approve(options)
        except CodedError as error:
            raise CommandError(f"{error.code} ({error.status}): {error.message}") from None

    def _check(self, session_id):
        goldens = GoldenSnapshot.objects.select_related("session", "revision__strategy")
        if session_id is not None:
            goldens = goldens.filter(session_id=session_id)
        differing = 0
        for golden in goldens:
            label = f"session {golden.session_id} ({golden.session.name}) with {golden.revision}"
            diff = golden_status(golden, check_latest=False).diff
            if diff:
                differing += 1
                self.stdout.write(f"DIFFERS  {label}")
                self.stdout.write("\n".join(diff))
            else:
                self.stdout.write(f"matches  {label}")
        self.stdout.write(f"{len(goldens)} golden snapshot(s), {differing} differ")
        if differing:
            sys.exit(1)

    def _approve(self, options):
        if options["session"] is None:
            raise CommandError("approve needs --session")
        session = session_for_read(options["session"])
        if options["strategy"]:
            revision = revision_for_read(strategy_for_read(options["strategy"]), options["revision"])
        elif session.applied_revision is not None:
            revision = session.applied_revision
        else:
            raise CommandError(f"session {session.pk} has no applied strategy: give --strategy")
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"--user: no user {options['user']!r}")
        golden = golden_approve(session=session, revision=revision, user=user)
        self.stdout.write(f"approved golden {golden.pk}: session {session.pk} with {revision}")
