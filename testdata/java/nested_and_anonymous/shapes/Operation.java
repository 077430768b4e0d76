package shapes;

/** Arithmetic on areas; constants with bodies. */
public enum Operation {
    PLUS("+") {
        double apply(double a, double b) {
            return a + b;
        }
    },
    TIMES("*") {
        double apply(double a, double b) {
            return check(a * b);
        }
    };

    private final String symbol;

    Operation(String symbol) {
        this.symbol = symbol;
    }

    abstract double apply(double a, double b);

    static double check(double v) {
        switch ((int) Math.signum(v)) {
            case -1:
                throw new IllegalArgumentException("negative " + v);
            case 0:
                return 0;
            default:
                return v;
        }
    }
}
