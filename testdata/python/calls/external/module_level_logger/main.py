import logging

logger = logging.getLogger(__name__)


def work():
    logger.info("working")
    return 1


work()
