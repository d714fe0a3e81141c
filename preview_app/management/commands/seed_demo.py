import secrets

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from assembly.sillytavern.png import card_png, solid_png
from preview_app import demo, services
from preview_app.models import GoldenSnapshot, Session
from strategies_app import services as strategy_services
from strategies_app.models import Character, Persona, Preset, Strategy, TextTemplate, WorldBook
from strategies_app.reference_data import ADMIN, DESIGNER, QA, ensure_reference_data

DEMO_USERS = ((ADMIN, ADMIN), (DESIGNER, DESIGNER), (QA, QA))  # (username, role)


class Command(BaseCommand):
    help = ("Load the demo (a preset, a character, a persona, a world book, a designer's strategy, two chat sessions "
            "with a few turns, a text-completion session, a golden snapshot) and the demo users admin / designer / qa, printing each new user's "
            "password once. Running it again changes nothing (--reset-passwords prints new passwords).")

    def add_arguments(self, parser):
        parser.add_argument("--reset-passwords", action="store_true", help="give the demo users new passwords")

    def handle(self, *args, **options):
        if getattr(settings, "PRODUCTION", False):
            raise CommandError("seed_demo refuses to run with DJANGO_ENV=production")
        with transaction.atomic():
            ensure_reference_data(apps)
            users = {role: self._user(username, role, options["reset_passwords"]) for username, role in DEMO_USERS}
            self._resources(users[ADMIN])
            strategy = self._strategy(users[DESIGNER])
            self._sessions(users[DESIGNER], users[QA], strategy)
            self._text_session(users[DESIGNER])
        self.stdout.write("Demo data is in place. Log in at http://127.0.0.1:8000/accounts/login/")

    def _user(self, username, role, reset):
        users = get_user_model()
        user = users.objects.filter(username=username).first()
        password = None
        if user is None:
            password = secrets.token_urlsafe(12)
            user = users.objects.create_user(username, password=password)
        elif reset:
            password = secrets.token_urlsafe(12)
            user.set_password(password)
        if role == ADMIN:
            user.is_staff = user.is_superuser = True
        user.save()
        user.groups.add(Group.objects.get(name=role))
        if password:
            self.stdout.write(f"user {username!r} (role {role}): password {password}")
        else:
            self.stdout.write(f"user {username!r} (role {role}) exists; password unchanged (--reset-passwords)")
        return get_user_model().objects.get(pk=user.pk)  # fresh: permission caches start empty

    def _resources(self, admin):
        if not Preset.objects.filter(name=demo.PRESET_NAME).exists():
            strategy_services.preset_import(user=admin, data=demo.PRESET, name=demo.PRESET_NAME)
        if not Character.objects.filter(name=demo.CHARACTER_NAME).exists():
            strategy_services.character_import(user=admin, data=card_png(demo.CARD, solid_png(32, 32, demo.AVATAR_RGB)))
        if not Persona.objects.filter(name=demo.PERSONA_NAME).exists():
            strategy_services.persona_import(user=admin, data=demo.PERSONA)
        if not WorldBook.objects.filter(name=demo.WORLDBOOK_NAME).exists():
            strategy_services.worldbook_import(user=admin, data=demo.WORLDBOOK, name=demo.WORLDBOOK_NAME)

    def _strategy(self, designer):
        strategy = Strategy.objects.filter(name=demo.STRATEGY_NAME, builtin=False).first()
        if strategy is None:
            source = Strategy.objects.get(slug="builtin-native-slots")
            strategy = strategy_services.strategy_copy(user=designer, source=source, name=demo.STRATEGY_NAME)
            strategy_services.revision_save(strategy=strategy, user=designer, note="demo: copied from the built-in")
        return strategy

    def _sessions(self, designer, qa, strategy):
        resources = {"preset": Preset.objects.get(name=demo.PRESET_NAME),
                     "character": Character.objects.get(name=demo.CHARACTER_NAME),
                     "persona": Persona.objects.get(name=demo.PERSONA_NAME),
                     "world_books": [WorldBook.objects.get(name=demo.WORLDBOOK_NAME)]}
        for name, applied, host, turns, extra in (
            (demo.NATIVE_SESSION, strategy, {"core_available": False}, demo.NATIVE_TURNS, {}),
            # the SillyTavern session: its author's note, and SillyTavern's keyword scan of the world book
            (demo.CORE_SESSION, Strategy.objects.get(slug="builtin-st"), {"core_available": True}, demo.CORE_TURNS,
             {"author_note": demo.AUTHOR_NOTE, "world_info_activation": "keywords"}),
        ):
            if Session.objects.filter(name=name).exists():
                continue
            session = services.session_create(user=designer, name=name, host=host, **extra, **resources)
            services.strategy_apply(session=session, strategy=applied)
            for text, reply in turns:
                services.session_update(session=session, current_input=text)
                services.turn_commit(session=session, reply=reply)
            services.session_update(session=session, current_input=demo.NEXT_INPUT)
            if applied == strategy and not GoldenSnapshot.objects.filter(session=session).exists():
                session.refresh_from_db()
                services.golden_approve(session=session, revision=session.applied_revision, user=qa)

    def _text_session(self, designer):
        """The card in a text-completion prompt: built-in instruct, context and system prompt templates."""
        if Session.objects.filter(name=demo.TEXT_SESSION).exists():
            return
        templates = {kind: TextTemplate.objects.get(kind=kind, name=name, builtin=True)
                     for kind, name in demo.TEXT_TEMPLATES.items()}
        session = services.session_create(
            user=designer, name=demo.TEXT_SESSION, character=Character.objects.get(name=demo.CHARACTER_NAME),
            persona=Persona.objects.get(name=demo.PERSONA_NAME),
            world_books=[WorldBook.objects.get(name=demo.WORLDBOOK_NAME)], current_input=demo.TEXT_INPUT)
        services.session_greet(session=session, index=0)
        for text, reply in demo.TEXT_TURNS:
            services.event_append(session=session, role="user", content=text, name=demo.PERSONA_NAME)
            services.event_append(session=session, role="assistant", content=reply, name=demo.CHARACTER_NAME)
        services.session_text_update(session=session, completion="text", instruct_template=templates["instruct"],
                                     context_template=templates["context"], sysprompt_template=templates["sysprompt"],
                                     instruct_enabled=True)
