package shapes;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/** Nested, inner, local and anonymous classes. */
public class Shapes {
    /** A shape with an area. */
    public interface Shape {
        double area();

        default String label() {
            return "shape of " + area();
        }
    }

    /** A circle (static nested). */
    public static class Circle implements Shape {
        private final double r;

        Circle(double r) {
            this.r = r;
        }

        public double area() {
            return Math.PI * r * r;
        }
    }

    /** A square (inner class that uses the outer instance). */
    public class Square implements Shape {
        private final double side;

        Square(double side) {
            this.side = side;
        }

        public double area() {
            return side * side;
        }

        void register() {
            Shapes.this.add(this);
        }
    }

    private final List<Shape> shapes = new ArrayList<>();

    void add(Shape shape) {
        shapes.add(shape);
    }

    double total() {
        class Accumulator {
            double sum;

            void take(Shape s) {
                sum += s.area();
            }
        }
        Accumulator acc = new Accumulator();
        for (Shape s : shapes) {
            acc.take(s);
        }
        return acc.sum;
    }

    Comparator<Shape> byArea() {
        return new Comparator<Shape>() {
            @Override
            public int compare(Shape a, Shape b) {
                return Double.compare(a.area(), b.area());
            }
        };
    }

    Runnable reporter() {
        return new Runnable() {
            public void run() {
                System.out.println(label(total()));
            }
        };
    }

    static String label(double value) {
        return "total " + value;
    }

    void build() {
        add(new Circle(1));
        Square square = new Square(2);
        square.register();
        Shape unit = new Shape() {
            public double area() {
                return 1;
            }
        };
        add(unit);
        shapes.sort(byArea());
        reporter().run();
        Box<Circle> box = Box.of(new Circle(3));
        box.area();
    }
}
