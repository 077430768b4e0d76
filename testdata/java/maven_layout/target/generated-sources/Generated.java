package com.example;

/** Build output: skipped because target/ sits beside pom.xml. */
class Generated {}
