import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from assembly.errors import CodedError
from strategies_app import sillytavern
from strategies_app.access import resource_for_read, revision_for_read, strategy_for_read

KINDS = {"preset": "preset", "card": "character", "worldbook": "worldbook", "persona": "persona",
         "template": "template"}


class Command(BaseCommand):
    help = ("Export a resource as the SillyTavern file it came from (a card as JSON, or as PNG with --png), or a "
            "strategy as its A.2 document. Writes to --output or prints to stdout.")

    def add_arguments(self, parser):
        which = parser.add_mutually_exclusive_group(required=True)
        for option in KINDS:
            which.add_argument(f"--{option}", metavar="ID", help=f"the {option}'s id")
        which.add_argument("--strategy", metavar="SLUG")
        parser.add_argument("--revision", help="with --strategy: a saved revision (default: the working draft)")
        parser.add_argument("--png", action="store_true", help="with --card: a PNG card (needs --output)")
        parser.add_argument("--output", help="file to write (default: stdout)")

    def handle(self, *args, **options):
        if options["png"] and not (options["card"] and options["output"]):
            raise CommandError("--png needs --card and --output")
        try:
            if options["strategy"]:
                strategy = strategy_for_read(options["strategy"])
                revision = options["revision"]
                document = revision_for_read(strategy, revision).document if revision else strategy.draft
                payload: bytes | dict = {**document, "id": strategy.slug}
            else:
                option = next(o for o in KINDS if options[o])
                row = resource_for_read(KINDS[option], options[option])
                if options["png"]:
                    payload = sillytavern.character_png(row)
                else:
                    payload = sillytavern.resource_document(KINDS[option], row)
        except CodedError as error:
            self.stdout.write(json.dumps(error.to_json(), ensure_ascii=False, indent=2))
            sys.exit(1)
        data = payload if isinstance(payload, bytes) else json.dumps(payload, ensure_ascii=False, indent=2).encode()
        if options["output"]:
            Path(options["output"]).write_bytes(data)
            self.stderr.write(f"wrote {len(data)} bytes to {options['output']}")
        else:
            self.stdout.write(data.decode("utf-8"))
