package shapes;

/** A point, as a record with a compact constructor. */
public record Point(double x, double y) {
    public Point {
        if (Double.isNaN(x) || Double.isNaN(y)) {
            throw new IllegalArgumentException("not a number");
        }
    }

    Point scale(double k) {
        return new Point(x * k, y * k);
    }

    double dist(Point other) {
        return Math.hypot(x - other.x(), y - other.y());
    }
}
