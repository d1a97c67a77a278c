# syntax=docker/dockerfile:1
# Kafka Health Operator image: the `kafka-health` CLI and operator, with a Java runtime for
# embedded Spark. Built the same way the tests build the venv (pip install of this project).

ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# ---- build: the project and what the operator runs. No extras: the HTML report's libraries
# ([report]) and the developer tools ([dev]) stay out, and so does the local testbed
# (kafka_health.testbed: tests and the demo only; the CLI lists `testbed` only where it exists).
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY pyproject.toml README.md ./
COPY operator/ operator/
COPY spark/ spark/
# A JDK here only: the driver's own classes (the slot source that lets a policy's plans be reused,
# kafka_health_spark/plan_jar.py) are compiled against the installed Spark's jars.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jdk-headless=17.* \
 && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/kafka-health \
 && /opt/kafka-health/bin/pip install --no-compile . \
 && KAFKA_HEALTH_SPARK_JAR=/opt/kafka-health/kafka-health-spark.jar /opt/kafka-health/bin/python -m kafka_health_spark.plan_jar \
 && find /opt/kafka-health -path '*/site-packages/kafka_health/testbed' -type d -prune -exec rm -rf {} + \
 && find /opt/kafka-health -name '__pycache__' -type d -prune -exec rm -rf {} +

# ---- runtime: slim Python + a headless Java 17 for the embedded Spark driver
FROM ${PYTHON_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless=17.* tini=0.19.* \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "/usr/lib/jvm/java-17-openjdk-$(dpkg --print-architecture)" /usr/lib/jvm/java-17 \
 && groupadd --system --gid 10001 kafka-health \
 && useradd --system --uid 10001 --gid kafka-health --home-dir /nonexistent --shell /usr/sbin/nologin kafka-health
COPY --from=build /opt/kafka-health /opt/kafka-health
# A read-only root filesystem works: everything written goes to /tmp (mount an emptyDir) and
# the history volume; Python writes no bytecode; Spark's scratch and Ivy dirs point at /tmp.
ENV PATH=/opt/kafka-health/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    JAVA_HOME=/usr/lib/jvm/java-17 \
    SPARK_LOCAL_DIRS=/tmp/spark \
    HOME=/tmp \
    KAFKA_HEALTH_HISTORY_DIR=/var/lib/kafka-health/history \
    KAFKA_HEALTH_SPARK_CLASS_ARCHIVE=/opt/kafka-health/spark-classes.jsa \
    KAFKA_HEALTH_SPARK_JAR=/opt/kafka-health/kafka-health-spark.jar
# The Spark driver's class archive, built for this image's JDK and jars: `kafka-health diagnose`
# run from the image maps it instead of loading Spark's classes; the operator's long-lived JVM
# does not (it would raise its RSS; kafka_health_spark/class_archive.py).
RUN python -m kafka_health.diagnose.class_archive \
 && rm -rf /tmp/* /tmp/.[!.]*
USER 10001:10001
EXPOSE 8080 8081
ENTRYPOINT ["/usr/bin/tini", "--", "kafka-health"]
CMD ["operator"]
