"""``scrapy train``: labelled pages in, a topic model (joblib) out, with its cross-validated quality."""

from __future__ import annotations

from pathlib import Path

from focuscrawl.commandbase import CommandError, FocusCommand
from focuscrawl.labelling.labels import OFF_TOPIC, ON_TOPIC


class Command(FocusCommand):
    requires_project = False
    requires_crawler_process = False  # no crawl: do not start a reactor
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return ("EXAMPLES... [--positive LABEL[,LABEL]] [--base MODEL] -o models/NAME.joblib [options]\n"
                "  scrapy train --query \"WORDS\" -o models/NAME.joblib   (or --urls FILE)")

    def short_desc(self) -> str:
        return "Train the topic model that scores pages, from labelled examples"

    def long_desc(self) -> str:
        return (
            "Train the topic model that scores pages. EXAMPLES are WARC files (labels from "
            "--labels FILE.tsv with url and label columns), JSON-lines files, folders with one "
            "sub-folder per label, or a focuscrawl crawl store. Prints examples per class and "
            "cross-validated precision, recall and F1. From WARC inputs and crawl stores it also "
            "trains a link model: which anchors and URLs lead to on-topic pages, learned from every "
            "link whose target is labelled or dead (a WARC: never recorded; a crawl store: fetched "
            "with an error or no response; a target the crawl never fetched is skipped), so "
            "retraining from a crawl store keeps a link model (--no-link-model to skip it). "
            "A crawl store's own labels (given with `scrapy label` or the console: on-topic, off-topic) "
            "are read without --labels. Retraining: `scrapy train CRAWL.db -o NEW` takes the model the "
            "crawl used (or --base MODEL), reads again the examples it was trained on (a model records "
            "where they came from) and adds the labelled pages: on-topic counts as the model's positive "
            "labels, off-topic as negative. "
            "Starting from little: EXAMPLES that are all on topic train against focuscrawl's background "
            "corpus (Debian package descriptions; said in the report and the model's metadata); --query "
            "WORDS writes a model from words alone; --urls FILE fetches on-topic pages politely. A crawl "
            "from such a model can grow it from its own pages (--grow, FOCUS_GROW_MODEL), and "
            "`scrapy train CRAWL.db -o NEW` retrains it from what the crawl judged relevant."
        )

    def add_options(self, parser) -> None:
        super().add_options(parser)
        group = parser.add_argument_group(title="Training")
        group.add_argument("--query", metavar="WORDS",
                           help="build the model from words alone, e.g. \"course syllabus lecture homework\"; a "
                                "page or link scores by how much of the query it uses")
        group.add_argument("--urls", metavar="FILE",
                           help="on-topic pages by address, one URL a line, fetched politely (robots.txt, "
                                "focuscrawl's User-Agent, the http_proxy of the environment, no private "
                                "networks) and kept beside the model as OUTPUT.urls.jsonl")
        group.add_argument("--contrast", metavar="PATH", action="append",
                           help="other pages of the same sites that are not what you want, for on-topic examples "
                                "alone (JSON lines, a folder, a WARC or a crawl store; labels ignored; may be "
                                "repeated); links are then read by the words your pages share and these do not")
        group.add_argument("--unlabelled-contrast", action="store_true",
                           help="train the page classifier against the --contrast pages too, as unlabelled pages "
                                "(some may be on topic), its scores calibrated for them (Elkan & Noto's c), which "
                                "helps on manuals and not on WebKB's course pages")
        group.add_argument("--grow", action="store_true",
                           help="mark a model made from words or on-topic pages alone to grow from the crawl's "
                                "pages as the crawl goes (FOCUS_GROW_MODEL overrides)")
        group.add_argument("--positive", metavar="LABEL[,LABEL]",
                           help="label(s) that are on topic; every other label is off topic (default with --base, "
                                "or retraining the model a crawl used, that model's positive labels)")
        group.add_argument("--base", metavar="MODEL",
                           help="retrain MODEL: its own training examples (read again from where they were) "
                                "plus EXAMPLES; by default the model a crawl store's crawl used, when no "
                                "--positive is given")
        group.add_argument("-o", "--output", metavar="FILE",
                           help="where to write the model, e.g. models/course.joblib")
        group.add_argument("--labels", metavar="FILE.tsv",
                           help="labels for WARC and crawl-store inputs (columns url, label)")
        group.add_argument("--include-host", metavar="REGEX",
                           help="use only pages whose host matches REGEX")
        group.add_argument("--exclude-host", metavar="REGEX",
                           help="leave out pages whose host matches REGEX")
        # Parsed here, not by argparse, so a bad value is one clear error line.
        group.add_argument("--no-link-model", action="store_true",
                           help="do not train the link model from the links of WARC inputs and crawl stores")
        group.add_argument("--no-background", action="store_true",
                           help="refuse examples that are all on topic instead of contrasting them with "
                                "focuscrawl's background corpus (Debian package descriptions)")
        group.add_argument("--cv-folds", metavar="N", default="5",
                           help="cross-validation folds (default 5; 0 skips cross-validation)")

    def execute(self, args: list[str], opts) -> None:
        if opts.query is not None:
            return self._query(args, opts)
        if not args and not opts.urls:
            raise CommandError(f"no examples given: scrapy train {self.syntax().splitlines()[0]} (or --query WORDS, --urls FILE)")
        if not opts.output:
            raise CommandError("no output path: add -o models/NAME.joblib")
        if opts.unlabelled_contrast and not opts.contrast:
            raise CommandError("--unlabelled-contrast trains against the --contrast pages: give them with --contrast PATH")
        positive = [p.strip() for p in (opts.positive or "").split(",") if p.strip()]
        if opts.positive is not None and not positive:
            raise CommandError("no positive label: add --positive LABEL[,LABEL]")
        folds = _folds(opts.cv_folds)
        # Imported here: Scrapy loads every command module at start-up, and scikit-learn is slow
        # to import; other commands should not pay for it.
        from focuscrawl.relevance import ExamplesError, ModelError, TopicModel, TrainingError, load_examples, train_topic_model
        from focuscrawl.relevance.examples import examples_from_sources, merge_examples

        output = Path(opts.output)
        if output.is_dir():
            raise CommandError(f"-o {output} is a folder; give a file name such as {output}/model.joblib")

        if opts.urls:
            args = [*args, self._fetch_urls(opts.urls, output, positive)]
            positive = positive or [ON_TOPIC]
        base_path = opts.base or (None if positive else _crawl_model(args))
        try:
            base = TopicModel.load(base_path) if base_path else None
        except ModelError as exc:
            raise CommandError(str(exc)) from None
        if base is not None and not base.labelled_off_topic:
            return self._from_crawl(args, opts, base, base_path, output, folds)
        if base is not None:
            if not base.metadata.get("sources"):
                raise CommandError(f"{base_path} does not record the examples it was trained on (trained by an "
                                   "older focuscrawl): give them as inputs, with --positive")
            positive = positive or [p for p in base.positive_labels if p != ON_TOPIC] or [ON_TOPIC]
            print(f"retraining {base_path}: its examples, read again, and {len(args)} input(s)")
        # A model without a link model keeps none when retrained: the crawl then learns its links'
        # words from every page it fetches, which a link model learned from the links to a few
        # dozen labelled pages does worse (docs/research.md, "Choosing the pages to label").
        keep_links = not opts.no_link_model and (base is None or base.link_pipeline is not None)
        try:
            examples = load_examples(
                args, labels_path=opts.labels,
                include_host=opts.include_host, exclude_host=opts.exclude_host, links=keep_links,
            )
            if base is not None:
                examples = merge_examples(examples_from_sources(base.metadata["sources"], links=keep_links),
                                          examples)
            elif not positive:
                if {e.label for e in examples} <= {ON_TOPIC, OFF_TOPIC}:
                    positive = [ON_TOPIC]  # a store labelled only by people
                else:
                    raise CommandError("no positive label: add --positive LABEL[,LABEL] (or --base MODEL)")
            contrast = self._contrast(examples, positive, opts.contrast) if opts.contrast else None
            model, report = train_topic_model(examples, positive, cv_folds=folds, background=not opts.no_background,
                                              unlabelled=contrast if opts.unlabelled_contrast else None)
        except (ExamplesError, TrainingError) as exc:
            raise CommandError(str(exc)) from None

        print(f"examples: {len(examples)} from {len(args)} input(s)")
        for reason, count in sorted(examples.skipped.items()):
            print(f"  skipped ({reason}): {count}")
        for label, count in report["examples_per_class"].items():
            mark = "  (positive)" if label in positive else ""
            print(f"  {label:<20} {count:>7}{mark}")
        print(f"positive: {report['n_positive']}  negative: {report['n_negative']}")
        _print_off_topic(report["off_topic"])
        if contrast:
            if opts.unlabelled_contrast:
                _print_calibration(report["off_topic"]["unlabelled"])
            self._read_links_by_contrast(model, examples, positive, contrast, opts.contrast)
        if opts.grow:
            if report["off_topic"].get("kind") != "background":
                raise CommandError("--grow is for a model from words or on-topic pages alone; this one has "
                                   "off-topic examples")
            model.metadata["grow"] = True
        cv = report["cv"]
        if cv:
            print(
                f"cross-validated ({cv['folds']} folds): precision {cv['precision']:.3f}  "
                f"recall {cv['recall']:.3f}  F1 {cv['f1']:.3f}"
            )
        elif "unlabelled" not in report["off_topic"]:  # a calibrated model said what it measured above
            print("cross-validation skipped (0 folds asked, or a class has a single example)")
        if not (model.metadata.get("links") or {}).get("words"):
            _print_link_report(report.get("links"), examples, asked=keep_links,
                               why="--no-link-model" if opts.no_link_model else
                               f"{base_path} has none: the crawl learns its links' words as it goes")
        try:
            model.save(output)
        except OSError as exc:
            raise CommandError(f"cannot write model to {output}: {exc.strerror or exc}") from None
        print(f"model written to {output}")


    @staticmethod
    def _contrast(examples, positive: list[str], paths: list[str]):
        """The pages of ``paths`` (other pages of the examples' sites, which the user did not pick)
        that are not among the examples: the unlabelled side of a model from on-topic pages alone."""
        from focuscrawl.relevance import ExamplesError
        from focuscrawl.relevance.examples import load_contrast

        if any(e.label not in positive and e.label != ON_TOPIC for e in examples):
            raise CommandError("--contrast is for on-topic examples alone; these have off-topic examples, "
                               "which teach the model and the links themselves")
        try:
            contrast = load_contrast(paths)
        except ExamplesError as exc:
            raise CommandError(f"--contrast: {exc}") from None
        picked = {e.url for e in examples if e.url}
        contrast = [e for e in contrast if e.url not in picked]
        if not contrast:
            raise CommandError(f"--contrast {' '.join(paths)} has no page that is not one of the examples")
        return contrast

    @staticmethod
    def _read_links_by_contrast(model, examples, positive: list[str], contrast, paths: list[str]) -> None:
        """A written link reading for a model trained from on-topic pages alone: the words its pages
        share and ``contrast`` (pages of the same sites the user did not pick) do not."""
        from focuscrawl.relevance.query import attach_link_reading, page_words

        mine = [e for e in examples if e.label in positive or e.label == ON_TOPIC]
        source = f"{len(contrast)} page(s) of {', '.join(str(Path(p).resolve()) for p in paths)}"
        words = attach_link_reading(model, [page_words(e.url, e.title, e.text) for e in mine],
                                    [page_words(e.url, e.title, e.text) for e in contrast], source)
        if words:
            print(f"links read by the words at least half the {len(mine)} pages use and the {len(contrast)} "
                  "contrast pages seldom do (each with the log of how many times as often the pages use it):")
            print("  " + "  ".join(f"{word} {lift:.2f}" for word, lift in words))
            print(f"  a link naming one of them is even odds ({model.metadata['links']['even_coverage']:.2f} of their weight)")
        else:
            print(f"links: no word the pages share is rare in the {len(contrast)} contrast pages; "
                  "links are valued by the topic model")

    def _from_crawl(self, args, opts, base, base_path, output: Path, folds: int) -> None:
        """Retrain a model made from words or on-topic pages alone from what its crawl found: the
        pages the crawl judged relevant against the rest it fetched, the user's own pages and any
        labels people gave kept in."""
        from focuscrawl.relevance import (ExamplesError, ModelError, TopicModel, TrainingError, load_examples,
                                          train_topic_model)
        from focuscrawl.relevance.examples import examples_from_sources, judged_by_crawl, merge_examples
        from focuscrawl.store import is_crawl_store

        stores = [a for a in args if Path(a).is_file() and is_crawl_store(a)]
        if not stores:
            raise CommandError(f"{base_path} was made from words or on-topic pages alone: retrain it from the crawl "
                               "store of a crawl that used it")
        try:
            lists = [judged_by_crawl(path) for path in stores]
            if base.metadata.get("sources"):
                lists.insert(0, examples_from_sources(base.metadata["sources"], links=False))
            try:
                lists.append(load_examples(args, labels_path=opts.labels, links=False))
            except ExamplesError:
                pass  # no page has a person's label: the crawl's judgement stands alone
            examples = merge_examples(*lists)
            positive = [p for p in base.positive_labels if p != ON_TOPIC] + [ON_TOPIC]
            model, report = train_topic_model(examples, positive, cv_folds=folds, link_model=False)
        except (ExamplesError, TrainingError) as exc:
            raise CommandError(str(exc)) from None
        model.metadata["retrained_from_crawl"] = {"model": str(base_path), "stores": [str(Path(s).resolve()) for s in stores]}
        for key in ("query", "start"):
            if key in base.metadata:
                model.metadata[key] = base.metadata[key]
        from focuscrawl.labelling.models import judging_model_path

        grown_file, grown = judging_model_path(str(base_path))
        if grown:  # what the crawl's rounds learned is in its judgements; say how it got there
            try:
                rounds = TopicModel.load(grown_file).metadata.get("grown") or []
            except ModelError:
                rounds = []
            model.metadata["retrained_from_crawl"]["grown"] = {"model": grown_file, "rounds": rounds}
            print(f"  the crawl grew the model in {len(rounds)} round(s) ({grown_file}): its pages were judged by it")
        print(f"retraining {base_path} (made from {'words' if base.metadata.get('start') == 'query' else 'on-topic pages alone'}) "
              f"from what its crawl found: the pages it judged relevant against the rest it fetched")
        for label, count in report["examples_per_class"].items():
            mark = "  (positive)" if label in positive else ""
            print(f"  {label:<20} {count:>7}{mark}")
        print(f"positive: {report['n_positive']}  negative: {report['n_negative']}")
        _print_off_topic(report["off_topic"])
        try:
            model.save(output)
        except OSError as exc:
            raise CommandError(f"cannot write model to {output}: {exc.strerror or exc}") from None
        print(f"model written to {output}")

    def _fetch_urls(self, path: str, output: Path, positive: list[str]) -> str:
        """Fetch the URLs of ``path`` as on-topic examples; write them as JSON lines beside the
        model (the model records where its examples are, for retraining and for growing)."""
        import json

        from focuscrawl.relevance.fetch import PoliteFetcher, read_url_list
        from focuscrawl.safety import NetworkPolicy

        try:
            urls = read_url_list(path)
        except OSError as exc:
            raise CommandError(f"cannot read --urls {path}: {exc.strerror or exc}") from None
        if not urls:
            raise CommandError(f"--urls {path} lists no URL (one a line)")
        from scrapy.settings.default_settings import USER_AGENT as SCRAPY_USER_AGENT

        from focuscrawl import BOT_NAME, DEFAULT_USER_AGENT

        config = self.config()
        user_agent, robots_agent = self.settings.get("USER_AGENT"), config.robots_agent
        if not user_agent or user_agent == SCRAPY_USER_AGENT:  # run outside the project: say who we are
            user_agent, robots_agent = DEFAULT_USER_AGENT, BOT_NAME
        fetcher = PoliteFetcher(user_agent, robots_agent, NetworkPolicy.from_config(config),
                                # Scrapy's own default is no delay: a second a host unless a project or -s says
                                delay=config.download_delay if self.settings.getpriority("DOWNLOAD_DELAY") >= 20 else 1.0)
        print(f"fetching {len(urls)} URL(s) from {path} (robots.txt obeyed, one request a second a host)")
        fetched = fetcher.fetch_all(urls, positive[0] if positive else ON_TOPIC)
        for url, why in fetched.failed:
            print(f"  skipped {url}: {why}")
        if not fetched.examples:
            url, why = fetched.failed[0]
            raise CommandError(f"none of the {len(urls)} URL(s) in {path} gave a page (the first, {url}: {why})")
        pages = output.with_name(output.name + ".urls.jsonl")
        try:
            pages.parent.mkdir(parents=True, exist_ok=True)
            with pages.open("w", encoding="utf-8") as fh:
                for e in fetched.examples:
                    fh.write(json.dumps({"url": e.url, "title": e.title, "text": e.text, "label": e.label}) + "\n")
        except OSError as exc:
            raise CommandError(f"cannot write the fetched pages to {pages}: {exc.strerror or exc}") from None
        print(f"  {len(fetched.examples)} page(s) fetched, kept in {pages}")
        return str(pages)

    def _query(self, args: list[str], opts) -> None:
        if args:
            raise CommandError("--query builds a model from words alone: give no EXAMPLES with it")
        if not opts.output:
            raise CommandError("no output path: add -o models/NAME.joblib")
        if not opts.query.strip():
            raise CommandError("--query is empty: give the words a page about the topic would use")
        from focuscrawl.relevance import TrainingError
        from focuscrawl.relevance.query import build_query_model

        output = Path(opts.output)
        if output.is_dir():
            raise CommandError(f"-o {output} is a folder; give a file name such as {output}/model.joblib")
        try:
            model = build_query_model(opts.query)
        except TrainingError as exc:
            raise CommandError(str(exc)) from None
        model.metadata["grow"] = bool(opts.grow)
        terms = model.metadata["query_terms"]
        print(f"query: {len(terms)} word(s), each weighed by its rarity in the background corpus "
              f"({model.metadata['off_topic']['pages']} pages):")
        print("  " + "  ".join(f"{term} {weight:.2f}" for term, weight in terms.items()))
        print("a page scores by the share of the query's weight it uses (plural and singular forms alike): "
              "half of it is even odds")
        print(f"a link by the share its anchor, nearby words and URL words use: "
              f"{model.metadata['links']['even_coverage']:.2f} of it (one word of average weight) is even odds")
        print("a page's own links count too: the query's words they name (anchor and URL), each once, times the "
              "share of its links that name any, add to its share")
        try:
            model.save(output)
        except OSError as exc:
            raise CommandError(f"cannot write model to {output}: {exc.strerror or exc}") from None
        print(f"model written to {output}")


def _print_off_topic(off_topic: dict) -> None:
    if off_topic.get("kind") != "background":
        return
    print(f"off topic: no example is, so {off_topic['pages']} background pages stand for the rest of the web: "
          f"{off_topic['source']} ({off_topic['licence']}). Pages about software count as off topic, everything "
          "else merely unlike the examples; label what the crawl finds to sharpen it")


def _print_calibration(unlabelled: dict) -> None:
    print(f"unlabelled: the {unlabelled['pages']} contrast pages are the other side too (some may be on topic: "
          "positive-unlabelled learning, Elkan & Noto 2008); scores are calibrated by "
          f"c = {unlabelled['c']:.4f}, the mean score of each example held out of a fit "
          f"({unlabelled['folds']} folds): {unlabelled['held_out_found']} of {unlabelled['held_out']} held-out "
          "examples count as found")


def _print_link_report(links: dict | None, examples, asked: bool = True, why: str = "--no-link-model") -> None:
    notes = getattr(examples, "link_notes", [])
    if links is None:
        if asked:
            why = "; ".join(notes) if notes else "no labelled links: they are learned from WARC inputs and crawl stores"
        print(f"link model: none ({why}); links are valued by the topic model")
        return
    print(f"link model: {links['n_links']} labelled links, {links['n_positive']} to positive pages, "
          f"{links['n_missing']} to dead URLs (never recorded, or failed when crawled)")
    for source, tally in getattr(examples, "link_sources", {}).items():
        skipped = f"skipped {tally['unlabelled']} to unlabelled pages"
        if tally["kind"] == "crawl store":
            skipped += f", {tally['unknown']} to pages the crawl never fetched"
        print(f"  from {source} ({tally['kind']}): {tally['labelled'] + tally['dead']} links, "
              f"{tally['dead']} of them dead; {skipped}")
    for note in notes:
        print(f"  {note}")
    if links.get("skipped"):
        print(f"  not trained: {links['skipped']}")
    elif links["cv"]:
        cv = links["cv"]
        print(f"  cross-validated ({cv['folds']} folds): average precision {cv['average_precision']:.3f} "
              f"(base rate {cv['base_rate']:.3f})")
    prior = links.get("part_prior")
    if prior and not links.get("skipped"):
        parts, others = prior["parts"], prior["others"]
        found = (f"links from positive pages rated >= {prior['min_score']}: into the page's own directory "
                 f"{parts['on_topic']} of {parts['links']} on topic, elsewhere {others['on_topic']} of {others['links']}")
        weight = "none (too few links)" if prior["weight"] is None else f"{prior['weight']:+.3f}"
        print(f"  a found page's parts: the learner starts at {weight} ({found})")


def _crawl_model(paths: list[str]) -> str | None:
    """The model the newest crawl of the first crawl store among ``paths`` used: what ``scrapy
    train CRAWL.db -o NEW`` retrains. A model file that is gone is an error naming it."""
    from focuscrawl.store import CrawlStore, StoreError, is_crawl_store

    for path in paths:
        if not is_crawl_store(path):
            continue
        try:
            with CrawlStore(path, create=False) as store:
                recorded = store.crawl_model()
        except StoreError:
            continue  # reading it as examples says what is wrong with it
        if recorded is None:
            continue
        model, crawl = recorded
        if not Path(model).is_file():
            raise CommandError(f"crawl {crawl} of {path} used the topic model {model}, which is gone: "
                               "give the model to retrain with --base, or the examples with --positive")
        return model
    return None


def _folds(value: str) -> int:
    try:
        folds = int(value)
    except (TypeError, ValueError):
        raise CommandError(f"--cv-folds must be a whole number, not {value!r}") from None
    if folds < 0 or folds == 1:
        raise CommandError(f"--cv-folds must be 0 (no cross-validation) or at least 2, not {folds}")
    return folds
