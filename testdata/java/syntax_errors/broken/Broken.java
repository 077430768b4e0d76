package broken;

/** Parsed as far as the tree allows. */
public class Broken {
    void ok() {
        helper();
    }

    void helper() {
    }

    void bad() {
        int x = ;
        helper(
    }

    void after() {
        ok();
    }
}
