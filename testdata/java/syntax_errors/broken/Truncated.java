package broken;

import java.util.List;

/** A file cut off in the middle of a method. */
class Truncated {
    List<String> items;

    void first() {
        new Fine().run();
    }

    void second() {
        String s = "never closed;
        first(
