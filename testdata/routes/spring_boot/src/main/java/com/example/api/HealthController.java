package com.example.api;

import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.ResponseBody;

/** No class-level prefix. */
@Controller
public class HealthController {
    @GetMapping("/health")
    @ResponseBody
    public String health() {
        return "ok";
    }
}
