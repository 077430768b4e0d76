#!/bin/bash
exec mvn -q compile exec:java -Dexec.mainClass=com.example.javalintaskmanager.App
