# kvroute: one image for the router (`serve`, the default command) and the mock engine (`mock-engine`).
#
# Built from the Maven artifact; Maven does not run inside Docker:
#   mvn -B -DskipTests package                      # writes kvroute-app/target/kvroute.jar
#   docker build -t kvroute:local .                 # on eclipse-temurin:17-jre
#   docker build --build-arg JRE_IMAGE=kvroute-jre:local -t kvroute:local .
#                                                   # on the local jlink base (docker/jre-base/build.sh)
# The base must provide `java` on PATH and a POSIX sh with `grep` (Temurin and the local base both do).
ARG JRE_IMAGE=eclipse-temurin:17-jre
FROM ${JRE_IMAGE}

# Non-root user kvroute (10001:10001); the local base already has it, Temurin gets it added.
RUN grep -q '^kvroute:' /etc/group || echo 'kvroute:x:10001:' >> /etc/group; \
    grep -q '^kvroute:' /etc/passwd || echo 'kvroute:x:10001:10001:kvroute:/app:/bin/false' >> /etc/passwd; \
    mkdir -p /app

COPY kvroute-app/target/kvroute.jar /app/kvroute.jar

# Class-data sharing (docs/performance.md, "Warm start"): an AppCDS archive of the classes the request
# path loads, from a training run of the server's own warm-up (no network beyond loopback). A base
# without CDS support leaves no archive, and the JVM then starts without one (-Xshare:auto).
# The Vector API for the request parser's string scan (docs/performance.md, "The string scan with the
# Vector API"), an incubator module: /app/jvm.args adds it when this base's JVM has it, else is empty.
RUN if java --add-modules jdk.incubator.vector -version >/dev/null 2>&1; then \
      echo '--add-modules=jdk.incubator.vector' > /app/jvm.args; else : > /app/jvm.args; fi
RUN java @/app/jvm.args -XX:ArchiveClassesAtExit=/app/kvroute.jsa -Xlog:cds=off,cds+dynamic=off -jar /app/kvroute.jar \
      serve --warm-up-only --warm-up-requests 3000 --warm-up-max 60s >/dev/null 2>&1 || rm -f /app/kvroute.jsa

USER 10001:10001
WORKDIR /app
ENV KVROUTE_HEALTH_URL=http://127.0.0.1:8080/health

# Exec form with the JRE alone: `healthcheck` GETs $KVROUTE_HEALTH_URL and exits 0 on a 2xx answer.
# Set KVROUTE_HEALTH_URL to the command's port and health path (the router and the engine differ).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx32m", \
       "-cp", "/app/kvroute.jar", "dev.kvroute.cli.HealthCheckCommand", "--quiet"]

# Heap: 40% of the container's memory limit. Direct memory (request bodies in Netty's buffers) may
# grow as large as the heap, so heap + direct stay within 80% of the limit, leaving the rest for the
# JVM's own memory (docs/operations.md, "Heap and memory"). Size both explicitly with
# JAVA_TOOL_OPTIONS, e.g. "-Xmx2g -XX:MaxDirectMemorySize=1g" (an explicit -Xmx replaces the percentage).
# The archive above, and the server's self warm-up before it listens (serve --warm-up-requests, on by
# default), make the first seconds after /ready run at close to the steady rate.
ENTRYPOINT ["java", "@/app/jvm.args", "-XX:MaxRAMPercentage=40", "-XX:+ExitOnOutOfMemoryError", \
            "-XX:SharedArchiveFile=/app/kvroute.jsa", "-Xshare:auto", "-Xlog:cds=off,cds+dynamic=off", \
            "-jar", "/app/kvroute.jar"]
CMD ["serve"]
