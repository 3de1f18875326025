"""What Qt asks of ICU, printed: run once with the full ICU data and once with the reduced
library preloaded (``LD_PRELOAD``); build.sh fails when the two outputs differ.

Covers each ICU entry point Qt Core imports (see icu_data.py): collation (QCollator, as
the file dialog's natural sort uses it), case mapping, time-zone ids and display names,
the Unicode codecs by name (legacy code pages are not kept: the app reads and writes
UTF-8 only). Which libicudata was loaded goes to stderr.
"""

import sys

from PySide6.QtCore import QCollator, QLocale, QStringDecoder, QStringEncoder, QTimeZone

names = ["file10.llmplan.json", "File2.llmplan.json", "ärger", "zebra", "Apfel", "file1"]
for locale in ("en_US", "C", "de_DE"):
    collator = QCollator(QLocale(locale))
    collator.setNumericMode(True)
    print(locale, sorted(names, key=collator.sortKey), collator.compare("a", "B"))
    print(QLocale(locale).toUpper("straße ﬁ"), QLocale(locale).toLower("İSTANBUL"))
for zone in (b"Europe/Berlin", b"America/New_York", b"Asia/Kolkata", b"UTC"):
    tz = QTimeZone(zone)
    print(
        zone,
        tz.isValid(),
        tz.displayName(
            QTimeZone.TimeType.StandardTime, QTimeZone.NameType.LongName, QLocale("en_US")
        ),
    )
print(len(QTimeZone.availableTimeZoneIds()) > 300)
for codec in ("UTF-8", "UTF-16LE", "UTF-32", "ISO-8859-1", "US-ASCII"):
    print(codec, QStringEncoder(codec).isValid(), QStringDecoder(codec).isValid())
with open("/proc/self/maps", encoding="ascii") as maps:
    loaded = {line.split()[-1] for line in maps if "libicudata" in line}
sys.stderr.write(f"icu data: {sorted(loaded)}\n")
