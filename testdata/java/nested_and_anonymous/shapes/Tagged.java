package shapes;

import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;

/** Marks shapes for the report. */
@Retention(RetentionPolicy.RUNTIME)
public @interface Tagged {
    String value() default "";
}
