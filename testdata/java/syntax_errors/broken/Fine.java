package broken;

class Fine {
    void run() {
        new Broken().ok();
    }
}
