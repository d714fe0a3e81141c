import json
import sys
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from assembly.errors import CodedError
from strategies_app import services
from studio.errors import ServiceError
from studio.http import MAX_BODY_BYTES, file_content, parse_json, too_large

KINDS = {"preset": "preset", "card": "character", "worldbook": "worldbook", "persona": "persona", "template": "template",
         "strategy": "strategy"}


class Command(BaseCommand):
    help = ("Import a SillyTavern preset, character card (JSON or PNG), world book, persona or text-completion "
            "template (instruct, context, system prompt, or a master export of them), or an A.2 strategy "
            "document. Prints the import report as JSON; exit 1 with the error JSON when the file is refused "
            "(nothing is stored).")

    def add_arguments(self, parser):
        which = parser.add_mutually_exclusive_group(required=True)
        for option in KINDS:
            which.add_argument(f"--{option}", metavar="FILE")
        parser.add_argument("--dry-run", action="store_true", help="report what would be created, store nothing")
        parser.add_argument("--name", help="name for a preset or world book (default: the file name)")
        parser.add_argument("--owner", help="username that owns what is created")

    def handle(self, *args, **options):
        option = next(o for o in KINDS if options[o])
        kind, path = KINDS[option], Path(options[option])
        try:
            owner = _owner(options["owner"])
            raw = _read(path)
            if kind == "strategy":
                report = services.strategy_import(user=owner, document=parse_json(raw, str(path)),
                                                  dry_run=options["dry_run"])
            else:
                report = services.IMPORTERS[kind](user=owner, data=file_content(raw, kind=kind, field=str(path)),
                                                  name=options["name"] or path.stem, dry_run=options["dry_run"])
        except CodedError as error:
            self.stdout.write(json.dumps(error.to_json(), ensure_ascii=False, indent=2))
            sys.exit(1)
        self.stdout.write(json.dumps(report.to_json(), ensure_ascii=False, indent=2))


def _owner(username):
    if username is None:
        return None
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ServiceError("NOT_FOUND", f"--owner: no user {username!r}", status=404, detail={"path": "owner"})
    return user


def _read(path: Path) -> bytes:
    try:
        if path.stat().st_size > MAX_BODY_BYTES:
            raise too_large(str(path), path.stat().st_size)
        return path.read_bytes()
    except OSError as error:
        raise ServiceError("INPUT_UNREADABLE", f"{path}: {error.strerror}", detail={"path": str(path)}) from None
