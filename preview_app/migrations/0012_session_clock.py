from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('preview_app', '0011_session_macro_variables'),
    ]

    operations = [
        migrations.AddField(
            model_name='session',
            name='clock',
            field=models.CharField(blank=True, default='', help_text="the moment SillyTavern's time and date macros read ({{time}}, {{date}}, ...), sent as the request's generation.now (ISO 8601 with its UTC offset); blank = not set: they stay as written", max_length=64),
        ),
    ]
