-- Database `ic_mini` for the project's own "mini" SQL tasks (envs/mini/sql.json).
-- MySQL dialect; loads in MariaDB 10.5+ and MySQL 8.

CREATE DATABASE IF NOT EXISTS `ic_mini` DEFAULT CHARACTER SET utf8mb4;
USE `ic_mini`;

DROP TABLE IF EXISTS `loan`;
DROP TABLE IF EXISTS `book`;
DROP TABLE IF EXISTS `member`;

CREATE TABLE `member` (
  `member_id` int NOT NULL,
  `name` varchar(64) NOT NULL,
  `city` varchar(64) NOT NULL,
  `joined_year` int NOT NULL,
  PRIMARY KEY (`member_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `book` (
  `book_id` int NOT NULL,
  `title` varchar(128) NOT NULL,
  `author` varchar(64) NOT NULL,
  `genre` varchar(32) NOT NULL,
  `pages` int NOT NULL,
  PRIMARY KEY (`book_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `loan` (
  `loan_id` int NOT NULL,
  `member_id` int NOT NULL,
  `book_id` int NOT NULL,
  `loan_date` date NOT NULL,
  `returned` tinyint(1) NOT NULL DEFAULT 0,
  PRIMARY KEY (`loan_id`),
  KEY `member_id` (`member_id`),
  KEY `book_id` (`book_id`),
  CONSTRAINT `loan_member` FOREIGN KEY (`member_id`) REFERENCES `member` (`member_id`),
  CONSTRAINT `loan_book` FOREIGN KEY (`book_id`) REFERENCES `book` (`book_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

INSERT INTO `member` VALUES
  (1,'Ada Brennan','Leeds',2019),
  (2,'Tomas Kowal','Krakow',2021),
  (3,'Mira Osei','Accra',2020),
  (4,'Jon Eriksen','Bergen',2022),
  (5,'Lena Vogt','Leeds',2023);

INSERT INTO `book` VALUES
  (1,'The Quiet Harbour','R. Lyle','fiction',312),
  (2,'Counting Stars','P. Anand','science',228),
  (3,'Salt and Stone','R. Lyle','fiction',401),
  (4,'A Short History of Maps','E. Barros','history',275),
  (5,'Patterns in the Wild','P. Anand','science',190),
  (6,'The Long Winter Road','K. Moss','fiction',356);

INSERT INTO `loan` VALUES
  (1,1,1,'2024-01-05',1),
  (2,1,2,'2024-01-20',1),
  (3,2,3,'2024-02-02',0),
  (4,3,1,'2024-02-10',1),
  (5,3,4,'2024-02-15',0),
  (6,3,5,'2024-03-01',0),
  (7,4,6,'2024-03-03',1),
  (8,5,2,'2024-03-09',0),
  (9,1,6,'2024-03-12',0);
