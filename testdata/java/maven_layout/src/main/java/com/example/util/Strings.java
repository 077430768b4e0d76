package com.example.util;

/** String helpers with overloads. */
public final class Strings {
    private Strings() {}

    public static String shout(String s) {
        return s.toUpperCase() + "!";
    }

    /** Pads with spaces. */
    public static String pad(String s, int width) {
        return pad(s, width, ' ');
    }

    public static String pad(String s, int width, char fill) {
        StringBuilder out = new StringBuilder(s);
        while (out.length() < width) {
            out.append(fill);
        }
        return out.toString();
    }

    public static String describe(int n) {
        return n < 0 ? "negative" : "count " + n;
    }

    public static String describe(String s) {
        return "text " + shout(s);
    }

    public static String join(String separator, String... parts) {
        return String.join(separator, parts);
    }
}
