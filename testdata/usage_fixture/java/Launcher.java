package demo;

public class Launcher {
    public static void main(String[] args) {
        new Launcher().start();
    }

    void start() {}

    static void main(int notMain) {}
}
