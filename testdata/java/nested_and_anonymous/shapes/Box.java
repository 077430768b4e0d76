package shapes;

import java.util.function.Function;

/** A box holding one shape; generic with a bound. */
@Tagged("box")
public class Box<T extends Shapes.Shape> {
    private final T item;

    public Box(T item) {
        this.item = item;
    }

    public double area() {
        return item.area();
    }

    public <R> R map(Function<T, R> f) {
        return f.apply(item);
    }

    static <S extends Shapes.Shape> Box<S> of(S shape) {
        return new Box<>(shape);
    }
}
