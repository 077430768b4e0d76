import xml.etree.ElementTree as ET


def parse(text):
    return ET.fromstring(text)


parse("<a/>")
